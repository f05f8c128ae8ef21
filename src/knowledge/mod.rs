//! Knowledge collections: chunking documents, readable text from web pages, and the vector
//! index searched for retrieval (exact, or through an HNSW graph for large collections). The
//! index registry that caches one index per collection is `registry::knowledge`, and the search
//! that embeds a query and reads it is `registry::search`; documents and chunks are stored by `store::documents`.

pub mod chunking;
pub mod graph;
pub mod html;
pub mod index;
mod vectors;
