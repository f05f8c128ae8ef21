//! The call-control markup that connects a call to our media stream:
//! `<Response><Connect><Stream url="wss://…/v1/sessions/twilio/stream"><Parameter name="token"
//! value="…"/></Stream></Connect></Response>`. The token travels as a stream parameter (Twilio
//! drops query strings from stream URLs).

/// The stream URL for a public base URL: `https` becomes `wss`, `http` becomes `ws`.
pub fn stream_url(public_base: &str) -> String {
    let base = public_base.trim_end_matches('/');
    let ws = if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        format!("wss://{base}")
    };
    format!("{ws}/v1/sessions/twilio/stream")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
}

/// TwiML connecting the call to `stream_url` with the relay token.
pub fn connect_stream(stream_url: &str, token: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Connect><Stream url=\"{}\"><Parameter name=\"token\" value=\"{}\"/></Stream></Connect></Response>",
        escape(stream_url),
        escape(token)
    )
}

/// TwiML that says `text` and hangs up: the answer for a call nobody can take (an unrouted
/// number, an agent that is gone, a task that already ended).
pub fn say_and_hang_up(text: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say>{}</Say><Hangup/></Response>",
        escape(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_the_stream_markup() {
        assert_eq!(
            stream_url("https://voice.example.com/"),
            "wss://voice.example.com/v1/sessions/twilio/stream"
        );
        assert_eq!(
            stream_url("http://127.0.0.1:8080"),
            "ws://127.0.0.1:8080/v1/sessions/twilio/stream"
        );
        let xml = connect_stream("wss://h/v1/sessions/twilio/stream", "a.b&c");
        assert!(xml.contains("<Stream url=\"wss://h/v1/sessions/twilio/stream\"><Parameter name=\"token\" value=\"a.b&amp;c\"/>"));
        assert!(
            !xml.contains("stream?"),
            "no query string on the stream URL"
        );
    }
}
