//! Where finished recordings live: files under the data dir's `recordings/` (the default), or
//! an S3-compatible object store through the `object_store` crate. Either way a recording is
//! written to a local file while its call runs; with S3 the file is uploaded in parts when the
//! call ends and then removed. Reads serve whole files or byte ranges without loading them.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use crate::config::RecordingsConfig;

pub const LOCAL: &str = "local";
pub const S3: &str = "s3";

/// A byte stream of (part of) a recording.
pub type ByteStream = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>;

#[derive(Clone)]
pub struct RecordingStorage {
    /// Where recordings are written while calls run (and kept, for the local store).
    dir: PathBuf,
    s3: Option<(Arc<dyn ObjectStore>, String)>,
}

impl std::fmt::Debug for RecordingStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingStorage")
            .field("dir", &self.dir)
            .field("s3", &self.s3.is_some())
            .finish()
    }
}

impl RecordingStorage {
    pub fn new(config: &RecordingsConfig, data_dir: &Path) -> anyhow::Result<RecordingStorage> {
        let dir = data_dir.join("recordings");
        let s3 = if config.store == S3 {
            let s3 = &config.s3;
            let mut builder = AmazonS3Builder::new()
                .with_bucket_name(s3.bucket.trim())
                .with_region(s3.region.trim())
                .with_allow_http(s3.allow_http);
            if !s3.endpoint.trim().is_empty() {
                builder = builder.with_endpoint(s3.endpoint.trim());
            }
            if !s3.access_key_id.trim().is_empty() {
                builder = builder
                    .with_access_key_id(s3.access_key_id.trim())
                    .with_secret_access_key(s3.secret_access_key.trim());
            }
            let store: Arc<dyn ObjectStore> = Arc::new(builder.build()?);
            Some((store, s3.prefix.trim().to_string()))
        } else {
            None
        };
        Ok(RecordingStorage { dir, s3 })
    }

    /// The local file a recording at `location` (relative) is written to.
    pub fn local_path(&self, location: &str) -> PathBuf {
        self.dir.join(location)
    }

    /// Where finished recordings go: `local` or `s3`.
    pub fn kind(&self) -> &'static str {
        if self.s3.is_some() {
            S3
        } else {
            LOCAL
        }
    }

    /// Moves a finished local file to the object store, if one is configured. Answers the
    /// (storage, location) the recording now has.
    pub async fn publish(&self, location: &str) -> Result<(String, String), String> {
        let Some((store, prefix)) = &self.s3 else {
            return Ok((LOCAL.to_string(), location.to_string()));
        };
        let key = format!("{prefix}{location}");
        let path = self.local_path(location);
        let mut file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        // Uploaded in parts as it is read (one PUT for small files).
        let mut upload =
            object_store::buffered::BufWriter::new(store.clone(), ObjectPath::from(key.as_str()));
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            let read = file
                .read(&mut buffer)
                .await
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if read == 0 {
                break;
            }
            upload
                .write_all(&buffer[..read])
                .await
                .map_err(|e| format!("upload of {key} failed: {e}"))?;
        }
        upload
            .shutdown()
            .await
            .map_err(|e| format!("upload of {key} failed: {e}"))?;
        if let Err(e) = tokio::fs::remove_file(&path).await {
            tracing::warn!(
                "uploaded {key} but could not remove {}: {e}",
                path.display()
            );
        }
        Ok((S3.to_string(), key))
    }

    /// The size of a stored recording.
    pub async fn size(&self, storage: &str, location: &str) -> Result<u64, String> {
        if storage == S3 {
            let (store, _) = self
                .s3
                .as_ref()
                .ok_or("the object store is not configured")?;
            let meta = store
                .head(&ObjectPath::from(location))
                .await
                .map_err(|e| format!("object store: {e}"))?;
            return Ok(meta.size);
        }
        let path = self.local_path(location);
        tokio::fs::metadata(&path)
            .await
            .map(|m| m.len())
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
    }

    /// Bytes `start..end` of a stored recording, streamed.
    pub async fn read(
        &self,
        storage: &str,
        location: &str,
        start: u64,
        end: u64,
    ) -> Result<ByteStream, String> {
        if storage == S3 {
            let (store, _) = self
                .s3
                .as_ref()
                .ok_or("the object store is not configured")?;
            let options = GetOptions {
                range: Some(GetRange::Bounded(start..end)),
                ..Default::default()
            };
            let result = store
                .get_opts(&ObjectPath::from(location), options)
                .await
                .map_err(|e| format!("object store: {e}"))?;
            return Ok(result
                .into_stream()
                .map_err(|e| std::io::Error::other(e.to_string()))
                .boxed());
        }
        let path = self.local_path(location);
        let mut file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        file.seek(std::io::SeekFrom::Start(start))
            .await
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let remaining = end.saturating_sub(start);
        Ok(futures_util::stream::try_unfold(
            (file, remaining),
            |(mut file, remaining)| async move {
                if remaining == 0 {
                    return Ok(None);
                }
                let mut chunk = vec![0u8; remaining.min(64 * 1024) as usize];
                let read = file.read(&mut chunk).await?;
                if read == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the recording is shorter than recorded",
                    ));
                }
                chunk.truncate(read);
                Ok(Some((Bytes::from(chunk), (file, remaining - read as u64))))
            },
        )
        .boxed())
    }

    /// Removes the local file of a recording that failed while it was being written (a
    /// missing one counts as removed).
    pub async fn remove_partial(&self, location: &str) -> Result<(), String> {
        match tokio::fs::remove_file(self.local_path(location)).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Removes a stored recording (a missing one counts as removed).
    pub async fn remove(&self, storage: &str, location: &str) -> Result<(), String> {
        if storage == S3 {
            let (store, _) = self
                .s3
                .as_ref()
                .ok_or("the object store is not configured")?;
            return match store.delete(&ObjectPath::from(location)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(format!("object store: {e}")),
            };
        }
        self.remove_partial(location).await
    }
}
