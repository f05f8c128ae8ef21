"""Drives the OpenAI-compatible audio routes with the official `openai` Python client, as a
user switching their base URL would. Exits non-zero on the first broken expectation.

Environment: SWITCHBOARD_BASE_URL (…/v1), SWITCHBOARD_API_KEY, FIXTURES (the audio fixtures
directory).
"""

import io
import json
import os
import re
import sys
import time
import urllib.request
import wave

import openai

client = openai.OpenAI(
    base_url=os.environ["SWITCHBOARD_BASE_URL"],
    api_key=os.environ["SWITCHBOARD_API_KEY"],
    max_retries=0,
    timeout=120,
)
fixtures = os.environ["FIXTURES"]
jfk = os.path.join(fixtures, "jfk.flac")


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


def words(text):
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


# Speech: WAV bytes that decode, at 24 kHz mono 16-bit.
speech = client.audio.speech.create(
    model="tts-1", voice="alloy", input="Hello from the speech endpoint.", response_format="wav"
)
audio = speech.read()
with wave.open(io.BytesIO(audio)) as wav:
    check(wav.getframerate() == 24000, f"wav rate {wav.getframerate()}")
    check(wav.getnchannels() == 1 and wav.getsampwidth() == 2, "wav shape")

# Speech as headerless PCM and MP3, streamed.
with client.audio.speech.with_streaming_response.create(
    model="gpt-4o-mini-tts", voice="nova", input="Streaming works too.", response_format="pcm"
) as response:
    pcm = b"".join(response.iter_bytes())
check(len(pcm) > 24000 and len(pcm) % 2 == 0, f"pcm length {len(pcm)}")
mp3 = client.audio.speech.create(model="tts-1-hd", voice="onyx", input="An MP3 file.").read()
check(mp3[:3] == b"ID3" or (mp3[0] == 0xFF and (mp3[1] & 0xE0) == 0xE0), "mp3 frame sync")

# Transcription: plain JSON.
with open(jfk, "rb") as f:
    result = client.audio.transcriptions.create(model="whisper-1", file=f)
check("ask not what your country can do for you" in result.text.lower(), result.text)

# Verbose JSON with word and segment timestamps.
with open(jfk, "rb") as f:
    verbose = client.audio.transcriptions.create(
        model="gpt-4o-mini-transcribe",
        file=f,
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
        language="en",
    )
check(verbose.language == "english", f"language {verbose.language}")
check(abs(verbose.duration - 11.0) < 0.3, f"duration {verbose.duration}")
check(len(verbose.segments) >= 1 and verbose.segments[0].start >= 0, "segments")
check(len(verbose.words) >= 15, f"{len(verbose.words)} words")
check(any("country" in w.word.lower() for w in verbose.words), "the word country")

# Text, SRT and WebVTT come back as strings.
with open(jfk, "rb") as f:
    text = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="text")
check(isinstance(text, str) and "americans" in text.lower(), repr(text))
with open(jfk, "rb") as f:
    srt = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="srt")
check(re.search(r"^1\n00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}\n", srt), repr(srt[:80]))
with open(jfk, "rb") as f:
    vtt = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="vtt")
check(vtt.startswith("WEBVTT") and "-->" in vtt, repr(vtt[:80]))

# Models: the SDK's models.list() reads OpenAI's list of the audio models; retrieve() one.
models = [m.id for m in client.models.list()]
for expected in ("whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe", "tts-1"):
    check(expected in models, f"{expected} not in {models}")
check(client.models.retrieve("whisper-1").owned_by == "switchboard", "retrieve whisper-1")
try:
    client.models.retrieve("no-such-model")
    check(False, "an unknown model was found")
except openai.NotFoundError as e:
    check(e.status_code == 404, f"status {e.status_code}")

# Streamed transcription with the gpt-4o family: text deltas as each window of the minute-long
# recording is decoded (its English half first), then the whole text; the deltas add up to it.
multilingual = os.path.join(fixtures, "multilingual.mp3")
arrivals = []
with open(multilingual, "rb") as f:
    stream = client.audio.transcriptions.create(model="gpt-4o-mini-transcribe", file=f, stream=True)
    for event in stream:
        arrivals.append((time.monotonic(), event))
types = [e.type for _, e in arrivals]
check(len(types) >= 3, f"events {types}")
check(types[-1] == "transcript.text.done", f"last event {types[-1]}")
check(all(t == "transcript.text.delta" for t in types[:-1]), f"events {types}")
deltas = "".join(e.delta for _, e in arrivals[:-1])
done = arrivals[-1][1]
check(deltas == done.text, f"deltas {deltas!r} against done {done.text!r}")
check("permission is hereby granted" in " ".join(words(done.text)), done.text)
# The English half was sent while the German half was still being decoded.
first_delta_at = arrivals[0][0]
check(arrivals[-1][0] - first_delta_at > 0.2, "the first delta came only with the end")
# A two-channel call recording streamed: each reader's channel is recognised, the merged text
# gives each sentence whole, and the deltas still add up to it.
stereo = os.path.join(fixtures, "stereo_diarization.wav")
with open(stereo, "rb") as f:
    stream = client.audio.transcriptions.create(
        model="gpt-4o-transcribe", file=f, stream=True, language="en"
    )
    events = list(stream)
check(events and events[-1].type == "transcript.text.done", f"events {[e.type for e in events]}")
check(all(e.type == "transcript.text.delta" for e in events[:-1]), f"events {[e.type for e in events]}")
deltas = "".join(e.delta for e in events[:-1])
check(deltas == events[-1].text, f"deltas {deltas!r} against done {events[-1].text!r}")
said = " ".join(words(events[-1].text))
for phrase in ("complaint against the wizard", "behind the curtain", "horizon seems extremely distant"):
    check(phrase in said, f"{phrase!r} not in {said!r}")
check(
    not said.index("complaint") < said.index("horizon") < said.index("curtain"),
    f"one sentence inside the other: {said!r}",
)
# whisper-1 ignores stream, as OpenAI's does: a plain JSON answer.
boundary = "switchboard-check"
with open(jfk, "rb") as f:
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n'.encode(),
        f'--{boundary}\r\nContent-Disposition: form-data; name="stream"\r\n\r\ntrue\r\n'.encode(),
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="jfk.flac"\r\n\r\n'.encode()
        + f.read()
        + b"\r\n",
        f"--{boundary}--\r\n".encode(),
    ]
request = urllib.request.Request(
    os.environ["SWITCHBOARD_BASE_URL"] + "/audio/transcriptions",
    data=b"".join(parts),
    headers={
        "Authorization": "Bearer " + os.environ["SWITCHBOARD_API_KEY"],
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    },
)
with urllib.request.urlopen(request, timeout=120) as plain:
    content_type = plain.headers["Content-Type"]
    body = json.loads(plain.read())
check(content_type.startswith("application/json"), content_type)
check("ask not what your country" in body["text"].lower(), body)

# Translation into English: the recording's German half comes out in English.
with open(multilingual, "rb") as f:
    translated = client.audio.translations.create(model="whisper-1", file=f, response_format="verbose_json")
check(translated.task == "translate" and translated.language == "english", f"{translated.task} {translated.language}")
english = words(translated.text)
check("permission" in english and "software" in english, translated.text)
german = [w for w in english if w in ("und", "der", "die", "das", "nicht", "werden", "ist", "mit")]
check(len(german) <= 1, f"German words {german} in {translated.text}")
with open(jfk, "rb") as f:
    text = client.audio.translations.create(model="whisper-1", file=f, response_format="text")
check("ask not what your country" in text.lower(), repr(text))
try:
    client.audio.translations.create(model="gpt-4o-transcribe", file=("jfk.flac", b"x"))
    check(False, "a translation model OpenAI does not translate with was accepted")
except openai.BadRequestError as e:
    check(e.param == "model", f"param {e.param}")

# Errors arrive as the client's own exception types, with OpenAI's error fields.
try:
    client.audio.transcriptions.create(model="whisper-1", file=("big.wav", b"\0" * (25 * 1024 * 1024 + 1)))
    check(False, "an upload over 25 MB was accepted")
except openai.APIStatusError as e:
    check(e.status_code == 413, f"status {e.status_code}")
try:
    client.audio.speech.create(model="tts-1", voice="alloy", input="x", response_format="flac")
    check(False, "flac was accepted")
except openai.BadRequestError as e:
    check(e.param == "response_format", f"param {e.param}")
try:
    client.audio.transcriptions.create(model="whisper-1", file=("notes.txt", b"plain words " * 100))
    check(False, "a text file was transcribed")
except openai.BadRequestError as e:
    check(e.param == "file", f"param {e.param}")
bad = openai.OpenAI(base_url=os.environ["SWITCHBOARD_BASE_URL"], api_key="sb_live_wrong", max_retries=0)
try:
    bad.audio.speech.create(model="tts-1", voice="alloy", input="x")
    check(False, "a wrong key was accepted")
except openai.AuthenticationError as e:
    check(e.code == "invalid_api_key", f"code {e.code}")

print("openai client: all checks passed")
