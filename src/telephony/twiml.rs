//! The call-control markup (TwiML) that connects a call to our media stream:
//! `<Response><Connect><Stream url="wss://…/v1/sessions/twilio/stream"><Parameter name="token"
//! value="…"/></Stream></Connect></Response>`. The token travels as a stream parameter (Twilio
//! drops query strings from stream URLs). Also the markup of a call handed over (`<Dial>`,
//! a conference), keys pressed (`<Play digits>`) and a call ended (protocols.md §3.5).

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

const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";

/// TwiML connecting the call to `stream_url` with the relay token.
pub fn connect_stream(stream_url: &str, token: &str) -> String {
    format!(
        "{HEAD}<Response>{}</Response>",
        connect_verb(stream_url, token)
    )
}

/// The `<Connect><Stream>` verb of [`connect_stream`].
fn connect_verb(stream_url: &str, token: &str) -> String {
    format!(
        "<Connect><Stream url=\"{}\"><Parameter name=\"token\" value=\"{}\"/></Stream></Connect>",
        escape(stream_url),
        escape(token)
    )
}

/// TwiML that presses `digits` on the line (`w`: half a second's pause), then connects the
/// call to `stream_url` with the relay token.
pub fn play_digits_then(digits: &str, stream_url: &str, token: &str) -> String {
    format!(
        "{HEAD}<Response><Play digits=\"{}\"/>{}</Response>",
        escape(digits),
        connect_verb(stream_url, token)
    )
}

/// TwiML that dials `number` for up to `timeout` seconds; Twilio then requests `action`
/// with `DialCallStatus`, and its answer says what the caller hears next.
pub fn dial(number: &str, action: &str, timeout: u32) -> String {
    format!(
        "{HEAD}<Response><Dial action=\"{}\" method=\"POST\" timeout=\"{timeout}\"><Number>{}</Number></Dial></Response>",
        escape(action),
        escape(number)
    )
}

/// TwiML for the person a call is handed to: `summary` said, then joined to conference `room`,
/// which ends when they leave.
pub fn tell_and_join(summary: &str, room: &str) -> String {
    format!(
        "{HEAD}<Response><Say>{}</Say><Dial><Conference endConferenceOnExit=\"true\">{}</Conference></Dial></Response>",
        escape(summary),
        escape(room)
    )
}

/// TwiML that tells the caller `message` and holds them in conference `room` until the
/// person joins it; the conference ends when the caller leaves.
pub fn hold_in_conference(message: &str, room: &str) -> String {
    format!(
        "{HEAD}<Response><Say>{}</Say><Dial><Conference startConferenceOnEnter=\"false\" endConferenceOnExit=\"true\">{}</Conference></Dial></Response>",
        escape(message),
        escape(room)
    )
}

/// TwiML that ends the call.
pub fn hang_up() -> String {
    format!("{HEAD}<Response><Hangup/></Response>")
}

/// TwiML that says `text` and hangs up: the answer for a call nobody can take (an unrouted
/// number, an agent that is gone, a task that already ended).
pub fn say_and_hang_up(text: &str) -> String {
    format!(
        "{HEAD}<Response><Say>{}</Say><Hangup/></Response>",
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

    #[test]
    fn builds_the_call_control_markup() {
        assert_eq!(
            play_digits_then("1w2#", "wss://h/s", "t"),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Play digits=\"1w2#\"/><Connect><Stream url=\"wss://h/s\"><Parameter name=\"token\" value=\"t\"/></Stream></Connect></Response>"
        );
        assert!(dial("+14155550100", "https://h/a?x=1&y=2", 20).contains(
            "<Dial action=\"https://h/a?x=1&amp;y=2\" method=\"POST\" timeout=\"20\"><Number>+14155550100</Number></Dial>"
        ));
        assert!(hold_in_conference("Please hold", "transfer-ses_1").contains(
            "<Say>Please hold</Say><Dial><Conference startConferenceOnEnter=\"false\" endConferenceOnExit=\"true\">transfer-ses_1</Conference></Dial>"
        ));
        assert!(tell_and_join("A <caller> needs help", "r")
            .contains("<Say>A &lt;caller&gt; needs help</Say>"));
    }
}
