//! A provider's backend, opened once per environment config: [`Connect`].
//!
//! A provider for a remote system (a container engine, a cluster, a cloud API) needs a client
//! built from the environment's config (an endpoint, a token). It says once how to open it —
//! `type Backend` and `async fn connect(&self, config: &Config)` in its `#[provider]` block —
//! and a hook that takes a `&Backend` argument receives the one for its call's config:
//!
//! - opened lazily, by the first call that needs it;
//! - shared by every later call whose config is the same (compared by a fingerprint of the
//!   wire config: a keyed hash, computed in memory, never logged; the config itself is not
//!   kept), and by concurrent first calls (one `connect` runs, the others wait for it);
//! - dropped when the host sends `configChanged`, and evicted (the least recently used first)
//!   past [`MAX_BACKENDS`] configs;
//! - when `connect` fails, its error is the call's error (converted for the call's method by
//!   [`IntoProviderError`]), and the next call tries again.
//!
//! A backend is dropped only when no call holds it any more (hooks hold an `Arc`).

use std::any::Any;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use paperclip_sandbox_protocol::methods::{CarriesConfig, JsonObject, Method};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::context::Context;
use crate::hook::IntoProviderError;
use crate::provider::{HookResult, SandboxProvider};

/// How many configs' backends a worker keeps open at once; past it, the backend used least
/// recently is dropped (and opened again when a call needs it).
pub const MAX_BACKENDS: usize = 16;

/// How a provider opens its backend from its typed config.
///
/// Written inside the `#[provider]` block (`type Backend = …;` and `async fn connect`), which
/// moves both into this impl; hooks then take the backend as an argument (`api: &Api`). See
/// the [module docs](self) for when it is opened and dropped.
#[async_trait]
pub trait Connect: SandboxProvider {
    /// The client hooks receive.
    type Backend: Send + Sync + 'static;
    /// The error of `connect`: a failed `connect` is the failure of the call that needed it.
    type Error: IntoProviderError + Send;

    /// Opens the backend for `config`. Its error must not quote the config (it carries
    /// resolved secrets).
    async fn connect(&self, config: &Self::Config) -> Result<Self::Backend, Self::Error>;
}

/// The open backends of one worker, by config fingerprint (type-erased: a provider has one
/// backend type).
#[derive(Default)]
pub(crate) struct Backends {
    inner: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    by_config: HashMap<u64, Slot>,
    clock: u64,
}

struct Slot {
    cell: Arc<dyn Any + Send + Sync>,
    used: u64,
}

impl std::fmt::Debug for Backends {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backends").field("open", &self.slots().by_config.len()).finish()
    }
}

impl Backends {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cell of the backend for `fingerprint`, made when absent.
    fn cell<B: Send + Sync + 'static>(&self, fingerprint: u64) -> Arc<OnceCell<Arc<B>>> {
        let mut slots = self.slots();
        slots.clock += 1;
        let now = slots.clock;
        if let Some(slot) = slots.by_config.get_mut(&fingerprint) {
            if let Ok(cell) = slot.cell.clone().downcast::<OnceCell<Arc<B>>>() {
                slot.used = now;
                return cell;
            }
        }
        if slots.by_config.len() >= MAX_BACKENDS && !slots.by_config.contains_key(&fingerprint) {
            let oldest = slots.by_config.iter().min_by_key(|(_, s)| s.used).map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                slots.by_config.remove(&oldest);
            }
        }
        let cell = Arc::new(OnceCell::<Arc<B>>::new());
        slots.by_config.insert(fingerprint, Slot { cell: cell.clone(), used: now });
        cell
    }

    /// Drops every backend (`configChanged`).
    pub(crate) fn clear(&self) {
        let dropped = std::mem::take(&mut self.slots().by_config);
        if !dropped.is_empty() {
            tracing::debug!(backends = dropped.len(), "config changed: backends dropped");
        }
    }
}

/// The fingerprint of a wire config: a hash with a per-process random key over the config
/// with object keys in sorted order (so key order does not matter).
pub(crate) fn fingerprint(config: &JsonObject) -> u64 {
    static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    let mut hasher = KEY.get_or_init(Default::default).build_hasher();
    hash_object(config, &mut hasher);
    hasher.finish()
}

fn hash_object(object: &JsonObject, h: &mut impl Hasher) {
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort_unstable();
    h.write_u8(b'{');
    h.write_usize(keys.len());
    for key in keys {
        key.hash(h);
        hash_value(&object[key], h);
    }
}

fn hash_value(value: &Value, h: &mut impl Hasher) {
    match value {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            items.iter().for_each(|v| hash_value(v, h));
        }
        Value::Object(o) => hash_object(o, h),
    }
}

/// The backend for the config of a call's `params`: the cached one, or opened by `connect`.
/// A call whose context has no config fingerprint (a hook called directly, not by the
/// runtime) opens a backend of its own.
#[doc(hidden)]
pub async fn backend<P, T>(
    provider: &P,
    cx: &Context,
    params: &T,
    method: Method,
) -> HookResult<Arc<P::Backend>>
where
    P: Connect + ?Sized,
    T: CarriesConfig<P::Config> + ?Sized,
{
    let connect = || async {
        let opened = provider.connect(params.config()).await;
        opened.map(Arc::new).map_err(|e| e.into_provider_error(method))
    };
    let Some(fingerprint) = cx.config_fingerprint() else {
        return connect().await;
    };
    let cell = cx.backends().cell::<P::Backend>(fingerprint);
    cell.get_or_try_init(connect).await.cloned()
}
