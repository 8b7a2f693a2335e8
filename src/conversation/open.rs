//! Opens the [`ConversationStore`] a [`StoreUrl`] names: in memory, the
//! embedded SQLite file, or Redis.

use std::sync::Arc;

use super::{
    config::MemoryConfig, embedded::EmbeddedStore, memory::InMemoryStore, redis_store::RedisStore,
    store::ConversationStore, store_url::StoreUrl,
};

/// Opens the store. The embedded one opens its file on first use (start-up
/// stays fast); Redis is reached now, so a wrong address stops start-up
/// with a clear error instead of failing every call later.
pub async fn open_store(
    url: &StoreUrl,
    config: MemoryConfig,
) -> Result<Arc<dyn ConversationStore>, String> {
    Ok(match url {
        StoreUrl::Memory => Arc::new(InMemoryStore::new(config)),
        StoreUrl::Embedded(path) => Arc::new(EmbeddedStore::new(path.clone(), config)),
        StoreUrl::Redis(address) => Arc::new(RedisStore::connect(address, config).await?),
    })
}
