//! A provider's backend, opened once per environment config: [`Connect`].
//!
//! A provider for a remote system (a container engine, a cluster, a cloud API) needs a client
//! built from the environment's config (an endpoint, a token). It says once how to open it —
//! `type Backend` and `async fn connect(&self, config: &Config)` in its `#[provider]` block —
//! and a hook that takes a `&Backend` argument receives the one for its call's config:
//!
//! - opened lazily, by the first call that needs it;
//! - shared by every later call whose config is the same (the whole wire config is compared,
//!   in a canonical form where object key order does not matter — not a hash of it, so two
//!   configs never share a backend; that form is kept in memory only, never logged, and
//!   overwritten when dropped), and by concurrent first calls (one `connect` runs, the others
//!   wait for it); one per backend type, so a wrapping provider and the one it delegates to
//!   may each keep their own;
//! - dropped when the host sends `configChanged`, and evicted (the least recently used first)
//!   past [`MAX_BACKENDS`] open backends;
//! - when `connect` fails, its error is the call's error (converted for the call's method by
//!   [`IntoProviderError`]), nothing of it is kept (it takes no place among the open
//!   backends), and the next call tries again.
//!
//! A backend is dropped only when no call holds it any more (hooks hold an `Arc`).

use std::any::{Any, TypeId};
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

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
///
/// Backends are kept per backend type and config: a wrapping provider that declares the same
/// `Backend` type as the provider it delegates to shares that provider's backend for a config
/// (whichever `connect` ran first opened it), so it must open it the same way — best by calling
/// the inner provider's `connect`.
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

/// The identity of a wire config: its canonical encoding (object keys in sorted order, every
/// string and list length-prefixed, so two different configs never encode alike), compared
/// whole — not a hash of it, so one config's backend is never handed to another.
///
/// It holds the config's resolved secrets: it has no `Debug`, is never logged, and its bytes
/// are overwritten when its last holder drops it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct ConfigKey(Arc<Canonical>);

#[derive(PartialEq, Eq, Hash)]
struct Canonical(Box<[u8]>);

impl Drop for Canonical {
    fn drop(&mut self) {
        for byte in self.0.iter_mut() {
            // SAFETY: `byte` is a valid, aligned, exclusive reference into the buffer. A
            // volatile write is not elided though the buffer is freed right after.
            unsafe { std::ptr::write_volatile(byte, 0) };
        }
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
}

impl ConfigKey {
    /// The key of `config`. The buffer is sized by a first pass, so that no partial copy of
    /// the secrets is left behind by a reallocation.
    pub(crate) fn of(config: &JsonObject) -> ConfigKey {
        let mut len = 0;
        encode_object(config, &mut |bytes| len += bytes.len());
        let mut buf = Vec::with_capacity(len);
        encode_object(config, &mut |bytes| buf.extend_from_slice(bytes));
        debug_assert_eq!(buf.len(), len);
        ConfigKey(Arc::new(Canonical(buf.into_boxed_slice())))
    }
}

fn encode_len(len: usize, out: &mut impl FnMut(&[u8])) {
    out(&(len as u64).to_le_bytes());
}

fn encode_str(s: &str, out: &mut impl FnMut(&[u8])) {
    encode_len(s.len(), out);
    out(s.as_bytes());
}

fn encode_object(object: &JsonObject, out: &mut impl FnMut(&[u8])) {
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort_unstable();
    out(b"{");
    encode_len(keys.len(), out);
    for key in keys {
        encode_str(key, out);
        encode_value(&object[key], out);
    }
}

fn encode_value(value: &Value, out: &mut impl FnMut(&[u8])) {
    match value {
        Value::Null => out(b"n"),
        Value::Bool(b) => out(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            out(b"#");
            encode_str(&n.to_string(), out);
        }
        Value::String(s) => {
            out(b"\"");
            encode_str(s, out);
        }
        Value::Array(items) => {
            out(b"[");
            encode_len(items.len(), out);
            items.iter().for_each(|v| encode_value(v, out));
        }
        Value::Object(o) => encode_object(o, out),
    }
}

/// The open backends of one worker, by backend type and config (type-erased).
///
/// A slot is made by the first call for a config and holds the cell its `connect` fills. A
/// failed `connect` removes its slot; a successful one makes the slot open, and only open
/// slots count toward [`MAX_BACKENDS`] — so configs whose `connect` fails never evict a
/// working backend.
pub(crate) struct Backends<S = RandomState> {
    inner: Mutex<Slots<S>>,
}

impl<S: Default> Default for Backends<S> {
    fn default() -> Self {
        Backends { inner: Mutex::new(Slots { by_config: HashMap::default(), clock: 0 }) }
    }
}

/// A slot's key: the backend's type and the config. Two backend types (a wrapping provider
/// and the provider it delegates to) keep a backend each for one config.
type SlotKey = (TypeId, ConfigKey);

struct Slots<S> {
    by_config: HashMap<SlotKey, Slot, S>,
    clock: u64,
}

struct Slot {
    cell: Arc<dyn Any + Send + Sync>,
    /// When a call last asked for it (the `clock` of [`Slots`]).
    used: u64,
    /// Whether its `connect` succeeded.
    open: bool,
}

impl Slot {
    fn holds<T>(&self, cell: &Arc<T>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.cell), Arc::as_ptr(cell))
    }
}

impl<S> std::fmt::Debug for Backends<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slots = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let open = slots.by_config.values().filter(|s| s.open).count();
        f.debug_struct("Backends").field("open", &open).finish()
    }
}

impl<S: BuildHasher + Default> Backends<S> {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots<S>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cell of the backend for `key`, made when absent; marks it used.
    fn cell<B: Send + Sync + 'static>(&self, key: &ConfigKey) -> Arc<OnceCell<Arc<B>>> {
        let mut slots = self.slots();
        slots.clock += 1;
        let now = slots.clock;
        let key = (TypeId::of::<OnceCell<Arc<B>>>(), key.clone());
        if let Some(slot) = slots.by_config.get_mut(&key) {
            if let Ok(cell) = slot.cell.clone().downcast::<OnceCell<Arc<B>>>() {
                slot.used = now;
                return cell;
            }
        }
        let cell = Arc::new(OnceCell::<Arc<B>>::new());
        slots.by_config.insert(key, Slot { cell: cell.clone(), used: now, open: false });
        cell
    }

    /// Marks `key`'s slot open now that `connect` filled `cell`, and evicts the open slot used
    /// least recently while more than [`MAX_BACKENDS`] are open. Nothing when the slot is no
    /// longer `cell`'s (dropped by `configChanged` meanwhile).
    fn opened<T: 'static>(&self, key: &ConfigKey, cell: &Arc<T>) {
        let mut slots = self.slots();
        let key = (TypeId::of::<T>(), key.clone());
        match slots.by_config.get_mut(&key) {
            Some(slot) if slot.holds(cell) => slot.open = true,
            _ => return,
        }
        while slots.by_config.values().filter(|s| s.open).count() > MAX_BACKENDS {
            let victim = slots
                .by_config
                .iter()
                .filter(|(k, s)| s.open && **k != key)
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone());
            let Some(victim) = victim else { break };
            slots.by_config.remove(&victim);
        }
    }

    /// Removes `key`'s slot after its `connect` failed, unless another call has filled it
    /// meanwhile.
    fn failed<B: 'static>(&self, key: &ConfigKey, cell: &Arc<OnceCell<B>>) {
        let mut slots = self.slots();
        let key = (TypeId::of::<OnceCell<B>>(), key.clone());
        if slots.by_config.get(&key).is_some_and(|s| s.holds(cell) && !s.open)
            && !cell.initialized()
        {
            slots.by_config.remove(&key);
        }
    }

    /// Drops every backend (`configChanged`).
    pub(crate) fn clear(&self) {
        let dropped = std::mem::take(&mut self.slots().by_config);
        if !dropped.is_empty() {
            tracing::debug!(backends = dropped.len(), "config changed: backends dropped");
        }
    }
}

/// The backend for the config of a call's `params`: the cached one, or opened by `connect`.
/// A call whose context has no config noted (a hook called directly, not by the
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
    let Some(key) = cx.config_key() else {
        return connect().await;
    };
    let backends = cx.backends();
    let cell = backends.cell::<P::Backend>(key);
    let opened = cell
        .get_or_try_init(|| async {
            let backend = connect().await?;
            backends.opened(key, &cell);
            Ok(backend)
        })
        .await
        .cloned();
    if opened.is_err() {
        backends.failed(key, &cell);
    }
    opened
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasherDefault, Hasher};

    use serde_json::json;

    use super::*;

    fn key(config: Value) -> ConfigKey {
        let Value::Object(config) = config else { panic!("an object") };
        ConfigKey::of(&config)
    }

    /// A hasher under which every config collides.
    #[derive(Default)]
    struct Collide;

    impl Hasher for Collide {
        fn finish(&self) -> u64 {
            7
        }
        fn write(&mut self, _: &[u8]) {}
    }

    #[tokio::test]
    async fn configs_whose_hashes_collide_keep_their_own_backends() {
        let backends = Backends::<BuildHasherDefault<Collide>>::default();
        let (a, b) = (key(json!({"token": "a"})), key(json!({"token": "b"})));
        let cell = backends.cell::<&str>(&a);
        cell.get_or_init(|| async { Arc::new("a's backend") }).await;
        backends.opened(&a, &cell);
        assert!(backends.cell::<&str>(&b).get().is_none(), "b was handed a's backend");
        assert_eq!(**backends.cell::<&str>(&a).get().unwrap(), "a's backend");
    }

    #[tokio::test]
    async fn two_backend_types_keep_a_backend_each_for_one_config() {
        // A wrapping provider and the provider it delegates to, with backends of their own.
        let backends = Backends::<RandomState>::default();
        let k = key(json!({"token": "a"}));
        let outer = backends.cell::<&str>(&k);
        outer.get_or_init(|| async { Arc::new("outer") }).await;
        backends.opened(&k, &outer);
        let inner = backends.cell::<u32>(&k);
        inner.get_or_init(|| async { Arc::new(7) }).await;
        backends.opened(&k, &inner);
        assert_eq!(
            **backends.cell::<&str>(&k).get().expect("the outer backend was dropped"),
            "outer"
        );
        assert_eq!(**backends.cell::<u32>(&k).get().expect("the inner backend was dropped"), 7);
    }

    #[test]
    fn the_canonical_form_ignores_key_order_and_nothing_else() {
        let same = [(
            json!({"a": 1, "b": {"c": [1, "x"], "d": null}}),
            json!({"b": {"d": null, "c": [1, "x"]}, "a": 1}),
        )];
        for (x, y) in same {
            assert!(key(x) == key(y));
        }
        let different = [
            (json!({"a": "bc"}), json!({"ab": "c"})),
            (json!({"a": ["b", "c"]}), json!({"a": ["bc"]})),
            (json!({"a": "1"}), json!({"a": 1})),
            (json!({"a": [[], []]}), json!({"a": [[[]]]})),
            (json!({"a": {}}), json!({"a": []})),
            (json!({"a": null}), json!({"a": false})),
            (json!({"a": 1}), json!({"a": 1.0})),
            (json!({}), json!({"": null})),
        ];
        for (x, y) in different {
            assert!(key(x.clone()) != key(y.clone()), "{x} and {y} share a key");
        }
    }
}
