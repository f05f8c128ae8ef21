//! Outside speech and language vendors. For now, the catalog of provider ids an agent may
//! name; adapters come beside it.

pub mod catalog;
