//! The ONNX Runtime library, loaded from the models directory once per process.
//!
//! `ort` is built with `load-dynamic`: nothing is linked at build time, and the shared library
//! (`models/onnxruntime/libonnxruntime.so`, ONNX Runtime 1.22) is opened on first use. `ort`
//! allows one library and one environment per process, so both live here behind a lock; a
//! failed attempt (a missing file) is not remembered and may be retried once the file is in
//! place.
//!
//! `ort` gives every session an automatic device-selection policy, and ONNX Runtime 1.22
//! then picks devices from the environment's hardware list, which can be empty (it is in
//! containers where device discovery finds nothing), failing with "No CPU based execution
//! providers were found". Registering the CPU execution provider explicitly, through the
//! library's exported `OrtSessionOptionsAppendExecutionProvider_CPU`, bypasses that policy:
//! this is the one piece of `unsafe` code outside the eSpeak wrapper.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use std::ffi::{c_int, CStr};

use ort::environment::Environment;
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::Session;
use ort::AsPointer;
use switchboard_actors::engine::EngineError;

/// The library's path inside the models directory.
pub const LIBRARY: &str = "onnxruntime/libonnxruntime.so";

struct Loaded {
    path: PathBuf,
    environment: Environment,
    /// A second handle on the library (the same mapping `ort` loaded), for the CPU provider.
    library: libloading::Library,
}

/// `OrtSessionOptionsAppendExecutionProvider_CPU(options, use_arena) -> OrtStatus*`.
type AppendCpu =
    unsafe extern "C" fn(*mut ort::sys::OrtSessionOptions, c_int) -> *mut ort::sys::OrtStatus;

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
    // SAFETY: the library is already loaded (and initialised) by `ort` above; opening it
    // again only takes another reference to the same mapping.
    let handle = unsafe { libloading::Library::new(library) }.map_err(|e| {
        EngineError::unavailable(format!(
            "the ONNX Runtime library {} cannot be opened ({e})",
            library.display()
        ))
    })?;
    *loaded = Some(Loaded {
        path: library.to_path_buf(),
        environment: environment.clone(),
        library: handle,
    });
    Ok(environment)
}

/// Opens the ONNX model `model` with the library at `library`: the CPU provider, every graph
/// optimisation, `intra_threads` threads per run and one between operators. `failed` turns
/// ONNX Runtime's message into the caller's error (which names the model).
pub fn cpu_session(
    library: &Path,
    model: &Path,
    intra_threads: usize,
    failed: impl Fn(String) -> EngineError,
) -> Result<Session, EngineError> {
    let environment = environment(library)?;
    let mut builder = Session::builder(&environment).map_err(|e| failed(e.to_string()))?;
    use_cpu_provider(&mut builder)?;
    builder
        .with_optimization_level(GraphOptimizationLevel::All)
        .map_err(|e| failed(e.to_string()))?
        .with_intra_threads(intra_threads.max(1))
        .map_err(|e| failed(e.to_string()))?
        .with_inter_threads(1)
        .map_err(|e| failed(e.to_string()))?
        .commit_from_file(model)
        .map_err(|e| failed(e.to_string()))
}

/// Registers ONNX Runtime's CPU execution provider (with its memory arena) on a session
/// builder, so that the session skips automatic device selection (see the module docs).
pub fn use_cpu_provider(builder: &mut SessionBuilder) -> Result<(), EngineError> {
    let loaded = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    let loaded = loaded
        .as_ref()
        .ok_or_else(|| EngineError::internal("ONNX Runtime is not loaded"))?;
    // SAFETY: the symbol is exported by every ONNX Runtime build with this exact signature
    // (cpu_provider_factory.h); the library outlives the call (held by `RUNTIME`).
    let append = unsafe {
        loaded
            .library
            .get::<AppendCpu>(b"OrtSessionOptionsAppendExecutionProvider_CPU\0")
    }
    .map_err(|e| EngineError::internal(format!("ONNX Runtime has no CPU provider entry ({e})")))?;
    // SAFETY: `builder.ptr_mut()` is the builder's live, non-null OrtSessionOptions.
    let status = unsafe { append(builder.ptr_mut(), 1) };
    if status.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null status is an OrtStatus owned by the caller: its message is read,
    // then it is released exactly once.
    let message = unsafe {
        let api = ort::api();
        let text = (api.GetErrorMessage)(status);
        let message = if text.is_null() {
            String::new()
        } else {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        };
        (api.ReleaseStatus)(status);
        message
    };
    Err(EngineError::internal(format!(
        "ONNX Runtime refused its CPU provider: {message}"
    )))
}
