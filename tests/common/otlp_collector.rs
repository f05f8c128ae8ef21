//! A local OpenTelemetry collector stand-in: accepts OTLP/HTTP protobuf trace exports at
//! `POST /v1/traces` exactly as a collector does (decoding `ExportTraceServiceRequest`,
//! answering an empty `ExportTraceServiceResponse`), and keeps what it received.

use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;

/// One export request as received.
#[derive(Clone, Debug)]
pub struct Export {
    pub content_type: String,
    pub authorization: String,
    pub request: ExportTraceServiceRequest,
}

pub struct Collector {
    /// The traces endpoint, for `[otlp] endpoint`.
    pub endpoint: String,
    exports: Arc<Mutex<Vec<Export>>>,
}

impl Collector {
    pub fn start() -> Collector {
        let exports = Arc::new(Mutex::new(Vec::new()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        let shared = exports.clone();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                HttpServer::new(move || {
                    App::new()
                        .app_data(web::Data::new(shared.clone()))
                        .app_data(web::PayloadConfig::new(16 << 20))
                        .route("/v1/traces", web::post().to(export))
                })
                .workers(1)
                .listen(listener)
                .unwrap()
                .run()
                .await
                .unwrap();
            });
        });
        Collector { endpoint, exports }
    }

    pub fn exports(&self) -> Vec<Export> {
        self.exports.lock().unwrap().clone()
    }
}

async fn export(
    req: HttpRequest,
    body: web::Bytes,
    exports: web::Data<Arc<Mutex<Vec<Export>>>>,
) -> HttpResponse {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let Ok(request) = ExportTraceServiceRequest::decode(body.as_ref()) else {
        return HttpResponse::BadRequest().finish();
    };
    exports.lock().unwrap().push(Export {
        content_type: header("content-type"),
        authorization: header("authorization"),
        request,
    });
    HttpResponse::Ok()
        .content_type("application/x-protobuf")
        .body(ExportTraceServiceResponse::default().encode_to_vec())
}
