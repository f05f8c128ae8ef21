//! The browser voice widget at `/widget/`: the ES modules of `widget/` (the element, the
//! session client, the audio worklets, the styles) and the demo page `/widget/demo`, embedded
//! in the binary and served with their content type, an ETag and revalidation on every use
//! (so an embedding page picks up a new release at once and a 304 costs nothing).
//!
//! No API key is involved: the files are public. The scripts answer with
//! `Access-Control-Allow-Origin: *` because module scripts and audio worklets loaded by another
//! site's page are fetched in CORS mode. The demo page carries a strict Content-Security-Policy
//! and `Referrer-Policy: no-referrer`, since a developer pastes an API key into it.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use rust_embed::RustEmbed;

use crate::error::{ApiError, ErrorBody};

/// The widget's files, embedded at compile time (read from `widget/` in debug builds).
#[derive(RustEmbed)]
#[folder = "widget/"]
struct Assets;

/// The demo page talks only to this server, runs only its own scripts and styles, and cannot
/// be framed (a key is typed into it).
const DEMO_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; img-src 'self' data:; media-src 'self'; base-uri 'none'; \
form-action 'none'; frame-ancestors 'none'";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource(["/widget", "/widget/"]).to(index))
        .service(web::resource("/widget/demo").to(demo))
        .service(web::resource("/widget/{file:.+}").to(asset));
}

/// `/widget/` leads to the demo page.
async fn index(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    readable_method(&req)?;
    Ok(HttpResponse::Found()
        .insert_header((header::LOCATION, "/widget/demo"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .finish())
}

/// The demo page: paste an API key, pick an agent, talk to it through the widget.
#[utoipa::path(get, path = "/widget/demo", tag = "widget",
    params(("agentId" = Option<String>, Query, description = "The agent to pick once the key's agents are loaded")),
    responses((status = 200, description = "The demo page", content_type = "text/html")))]
async fn demo(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    serve(&req, "demo.html")
}

/// A file of the widget: `widget.js` (the element and the one-tag embed), `session.js`,
/// the audio worklets, `widget.css`. Revalidate with `If-None-Match`.
#[utoipa::path(get, path = "/widget/{file}", tag = "widget",
    params(("file" = String, Path, description = "File name, e.g. `widget.js`")),
    responses(
        (status = 200, description = "The file, with its content type, `ETag`, `Cache-Control: no-cache` and `Access-Control-Allow-Origin: *`"),
        (status = 304, description = "Not modified (`If-None-Match` names this version)"),
        (status = 404, body = ErrorBody),
        (status = 405, body = ErrorBody)))]
async fn asset(req: HttpRequest, file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    serve(&req, &file.into_inner())
}

/// One embedded file, or the documented 404.
fn serve(req: &HttpRequest, name: &str) -> Result<HttpResponse, ApiError> {
    let Some(embedded) = Assets::get(name) else {
        return Err(ApiError::NotFound(format!(
            "no widget file at {}",
            req.path()
        )));
    };
    readable_method(req)?;
    let etag = etag_of(&embedded.metadata.sha256_hash());
    let unchanged = not_modified(req, &etag);
    let mut response = if unchanged {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response
        .insert_header((header::ETAG, etag.as_str()))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if name.ends_with(".html") {
        response
            .insert_header((header::CONTENT_SECURITY_POLICY, DEMO_CSP))
            .insert_header((header::REFERRER_POLICY, "no-referrer"))
            .insert_header((header::X_FRAME_OPTIONS, "DENY"));
    } else {
        // Another site's page may load the modules, the worklets and the styles.
        response
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
            .insert_header(("Cross-Origin-Resource-Policy", "cross-origin"));
    }
    if unchanged {
        return Ok(response.finish());
    }
    Ok(response
        .insert_header((header::CONTENT_TYPE, content_type(name)))
        .body(embedded.data.into_owned()))
}

/// Only GET and HEAD read these files; anything else is the documented 405.
fn readable_method(req: &HttpRequest) -> Result<(), ApiError> {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        Ok(())
    } else {
        Err(ApiError::MethodNotAllowed(format!(
            "{} is not allowed on {}",
            req.method(),
            req.path()
        )))
    }
}

/// A strong validator: the first 16 bytes of the file's SHA-256, hex.
fn etag_of(hash: &[u8; 32]) -> String {
    let hex: String = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether `If-None-Match` already names this version (RFC 9110 13.1.2: weak comparison,
/// a list of tags or `*`).
fn not_modified(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag)
}

fn content_type(name: &str) -> HeaderValue {
    let extension = name.rsplit_once('.').map_or("", |(_, ext)| ext);
    HeaderValue::from_static(match extension {
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "json" => "application/json",
        _ => "application/octet-stream",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn etags_are_quoted_hex_of_the_hash() {
        let tag = etag_of(&[0xab; 32]);
        assert_eq!(tag, format!("\"{}\"", "ab".repeat(16)));
    }

    #[test]
    fn if_none_match_takes_lists_weak_tags_and_star() {
        let etag = "\"abc\"";
        let cases = [
            ("\"abc\"", true),
            ("W/\"abc\"", true),
            ("\"x\", \"abc\"", true),
            ("*", true),
            ("\"abd\"", false),
            ("abc", false),
        ];
        for (header_value, expected) in cases {
            let req = TestRequest::default()
                .insert_header((header::IF_NONE_MATCH, header_value))
                .to_http_request();
            assert_eq!(not_modified(&req, etag), expected, "{header_value}");
        }
        assert!(!not_modified(
            &TestRequest::default().to_http_request(),
            etag
        ));
    }

    #[test]
    fn every_embedded_file_has_a_known_content_type() {
        for name in Assets::iter() {
            assert_ne!(
                content_type(&name),
                "application/octet-stream",
                "{name} would be served as bytes"
            );
        }
        assert!(Assets::get("demo.html").is_some());
        assert!(Assets::get("widget.js").is_some());
    }
}
