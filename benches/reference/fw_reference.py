#!/usr/bin/env python3
"""Reference transcriptions with faster-whisper (CTranslate2) on the same model directories
as the embedded engine, for side-by-side timing and word error rate.

    pip install faster-whisper
    python3 benches/reference/fw_reference.py transcribe FILE --model models/whisper-tiny.en \
        --compute-type int8 [--beam-size 1] [--language en]
    python3 benches/reference/fw_reference.py clip SRC DST --seconds 3.5
    python3 benches/reference/fw_reference.py wer "reference text" FILE.json

`transcribe` prints the transcript as JSON ({"text", "language", "segments"}) like
`switchboard transcribe`; `clip` writes the first seconds of SRC as 16 kHz mono PCM16 WAV;
`wer` prints the word error rate of a transcript JSON against a reference.
"""

import argparse
import json
import re
import sys
import wave


def transcribe(args):
    from faster_whisper import WhisperModel

    model = WhisperModel(
        args.model, device="cpu", compute_type=args.compute_type, cpu_threads=args.threads
    )
    segments, info = model.transcribe(
        args.file,
        beam_size=args.beam_size,
        language=args.language,
        word_timestamps=args.words,
        vad_filter=False,
    )
    segments = list(segments)
    out = {
        "text": " ".join(s.text.strip() for s in segments),
        "language": info.language,
        "duration": info.duration,
        "segments": [{"start": s.start, "end": s.end, "text": s.text.strip()} for s in segments],
    }
    json.dump(out, sys.stdout, indent=2)
    print()


def clip(args):
    from faster_whisper.audio import decode_audio
    import numpy as np

    audio = decode_audio(args.src, sampling_rate=16000)
    audio = audio[: int(args.seconds * 16000)]
    pcm = (np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2")
    with wave.open(args.dst, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(pcm.tobytes())


def words(text):
    return [w for w in re.sub(r"[^\w\s']", " ", text.lower()).split() if w]


def wer(reference, hypothesis):
    r, h = words(reference), words(hypothesis)
    row = list(range(len(h) + 1))
    for i, rw in enumerate(r):
        prev, row[0] = row[0], i + 1
        for j, hw in enumerate(h):
            cur = row[j + 1]
            row[j + 1] = prev if rw == hw else 1 + min(prev, row[j], row[j + 1])
            prev = cur
    return row[len(h)] / max(len(r), 1)


def wer_command(args):
    with open(args.transcript) as f:
        text = json.load(f)["text"]
    print(f"{wer(args.reference, text):.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("transcribe")
    t.add_argument("file")
    t.add_argument("--model", required=True)
    t.add_argument("--compute-type", default="int8")
    t.add_argument("--beam-size", type=int, default=5)
    t.add_argument("--language")
    t.add_argument("--words", action="store_true")
    t.add_argument("--threads", type=int, default=0)
    t.set_defaults(run=transcribe)
    c = sub.add_parser("clip")
    c.add_argument("src")
    c.add_argument("dst")
    c.add_argument("--seconds", type=float, default=3.5)
    c.set_defaults(run=clip)
    w = sub.add_parser("wer")
    w.add_argument("reference")
    w.add_argument("transcript")
    w.set_defaults(run=wer_command)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
