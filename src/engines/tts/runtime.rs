//! The ONNX Runtime library, loaded from the models directory once per process.
//!
//! `ort` is built with `load-dynamic`: nothing is linked at build time, and the shared library
//! (`models/onnxruntime/libonnxruntime.so`, ONNX Runtime 1.22) is opened on first use. `ort`
//! allows one library and one environment per process, so both live here behind a lock; a
//! failed attempt (a missing file) is not remembered and may be retried once the file is in
//! place.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;
use switchboard_actors::engine::EngineError;

/// The library's path inside the models directory.
pub const LIBRARY: &str = "onnxruntime/libonnxruntime.so";

struct Loaded {
    path: PathBuf,
    environment: Environment,
}

static RUNTIME: Mutex<Option<Loaded>> = Mutex::new(None);

/// The library's path for a models directory.
pub fn library_path(models_dir: &Path) -> PathBuf {
    models_dir.join(LIBRARY)
}

/// True once a library has been loaded in this process.
pub fn is_loaded() -> bool {
    RUNTIME
        .lock()
        .map(|loaded| loaded.is_some())
        .unwrap_or(false)
}

/// The process's ONNX Runtime environment, loading `library` on first use. Once a library is
/// loaded it serves every later call, whatever path they name.
pub fn environment(library: &Path) -> Result<Environment, EngineError> {
    let mut loaded = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(loaded) = loaded.as_ref() {
        if loaded.path != library {
            tracing::debug!(
                loaded = %loaded.path.display(),
                asked = %library.display(),
                "ONNX Runtime is already loaded; reusing it"
            );
        }
        return Ok(loaded.environment.clone());
    }
    if !library.is_file() {
        return Err(EngineError::unavailable(format!(
            "the ONNX Runtime library {} is missing; run scripts/fetch-models",
            library.display()
        )));
    }
    let environment = ort::init_from(library)
        .map_err(|e| {
            EngineError::unavailable(format!(
                "the ONNX Runtime library {} cannot be loaded ({e}); run scripts/fetch-models",
                library.display()
            ))
        })?
        .with_name("switchboard-tts")
        .build()
        .map_err(|e| EngineError::internal(format!("ONNX Runtime failed to start: {e}")))?;
    *loaded = Some(Loaded {
        path: library.to_path_buf(),
        environment: environment.clone(),
    });
    Ok(environment)
}
