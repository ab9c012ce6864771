//! kprof's engine: run-time loading of CUDA/CUPTI/NVML, the CUPTI activity backend, kernel
//! attribution to regions, NVTX ranges, and the run loop ([`runner`]).
//!
//! Nothing links against CUDA: every library is `dlopen`ed at run time by absolute path, and a
//! missing library is an [`EngineError`] with the list of places searched, never a panic.
//!
//! # API overview (engine side; exact signatures)
//!
//! ```text
//! // error.rs
//! pub enum EngineError { LibraryNotFound { library: String, tried: Vec<PathBuf>, hint: String },
//!     SymbolMissing { library, symbol, path, hint }, DriverCall { call: &'static str, code: i32, name: String, hint: Option<String> },
//!     CuptiCall { call: &'static str, code: u32, message: String, hint: Option<String> },
//!     SubscriberTaken { call, message, version: u32 }, DroppedRecords { count: u64, buffer_mib: usize },
//!     SessionActive, RegionMisuse(String), KeyOverflow { field: &'static str, value: u64, bits: u32 },
//!     Unsupported(String), Io { context: String, source: io::Error }, Fixture { path, line, message } }
//! impl EngineError { pub fn io(context: impl Into<String>, source: io::Error) -> Self }
//!
//! // loader.rs
//! pub struct SearchEnv { pub vars: HashMap<String, String>, pub proc_maps: Option<String>,
//!                        pub site_packages: Vec<PathBuf>, pub root: PathBuf }
//! impl SearchEnv { pub fn from_process() -> Self }
//! pub enum LibKind { Cuda, Cupti, Nvml }
//! pub fn search(kind: LibKind, env: &SearchEnv) -> SearchPlan           // pure
//! pub fn open_plan(kind: LibKind, plan: &SearchPlan) -> Result<LoadedLib, EngineError>
//! pub fn load_library(kind: LibKind, env: &SearchEnv) -> Result<LoadedLib, EngineError> // once per process
//! pub fn mapped_libraries(maps: &str, prefix: &str) -> Vec<PathBuf>
//! pub fn nvperf_host_beside(cupti: &Path) -> Option<PathBuf>
//! pub struct Versions { pub driver: i32, pub cupti_api: u32, pub driver_release: Option<String> }
//! pub struct Libraries { pub cuda: &'static Driver, pub cupti: &'static Cupti, pub cuda_path: PathBuf,
//!     pub cupti_path: PathBuf, pub nvperf_host_path: Option<PathBuf>, pub nvml_path: Option<PathBuf>,
//!     pub versions: Versions }
//! impl Libraries { pub fn load() -> Result<&'static Libraries, EngineError>;
//!                  pub fn load_with(env: &SearchEnv) -> Result<&'static Libraries, EngineError> }
//!
//! // driver.rs
//! pub struct DeviceProps { pub ordinal: i32, pub name: String, pub l2_bytes: u64, pub clock_khz: u32,
//!                          pub mem_clock_khz: u32, pub cc: (i32, i32), pub uuid: String }
//! pub struct DeviceBuffer { pub ptr: u64, pub bytes: usize }
//! impl Driver {  // pub fns: DriverFns (raw pointers), pub path: &'static Path, pub version: i32
//!     pub fn load(env: &SearchEnv) -> Result<&'static Driver, EngineError>   // dlopen + cuInit(0)
//!     pub fn check(&self, call: &'static str, code: i32) -> Result<(), EngineError>
//!     pub fn error_name(&self, code: i32) -> String
//!     pub fn current_context(&self) -> Result<Option<CuContext>, EngineError>
//!     pub fn ensure_context(&self) -> Result<CuContext, EngineError>  // else retain device 0's primary ctx
//!     pub fn current_device(&self) -> Result<i32, EngineError>
//!     pub fn device_count(&self) -> Result<i32, EngineError>
//!     pub fn synchronize(&self) -> Result<(), EngineError>
//!     pub fn alloc(&self, bytes: usize) -> Result<DeviceBuffer, EngineError>
//!     pub fn memset(&self, buf: DeviceBuffer, value: u8) -> Result<(), EngineError>
//!     pub fn free(&self, buf: DeviceBuffer) -> Result<(), EngineError>
//!     pub fn device_info(&self, ordinal: i32) -> Result<DeviceProps, EngineError> }
//!
//! // cupti::ffi
//! impl Cupti {   // pub fns: CuptiFns, pub path, pub nvperf_host: Option<PathBuf>, pub api_version: u32
//!     pub fn load(env: &SearchEnv) -> Result<&'static Cupti, EngineError>   // no GPU needed
//!     pub fn check(&self, call: &'static str, code: u32) -> Result<(), EngineError>
//!     pub fn result_string(&self, code: u32) -> String
//!     pub fn timestamp_ns(&self) -> Result<u64, EngineError> }
//! pub mod cbid { LAUNCH_CBIDS: [u32; 8], fn is_graph_launch(cbid: u32) -> bool, ... }
//!
//! // cupti::records (pure)
//! pub struct KernelRecord { start_ns: u64, end_ns: u64, device_id: u32, context_id: u32, stream_id: u32,
//!     correlation_id: u32, grid_id: i64, graph_id: u32, graph_node_id: u64, name: String }  (+ duration_ns())
//! pub struct ApiRecord { cbid: u32, start_ns: u64, end_ns: u64, process_id: u32, thread_id: u32, correlation_id: u32 }
//! pub struct ExternalCorrelationRecord { external_kind: u32, external_id: u64, correlation_id: u32 }
//! pub enum Record { Kernel(..), Api(..), External(..) }
//! pub fn parse_record(bytes: &[u8], kernel_name: Option<String>) -> Option<Record>
//! pub struct ActivityBatch { pub kernels: Vec<KernelRecord>, pub launches: Vec<ApiRecord>,
//!                            pub external: Vec<ExternalCorrelationRecord> }
//! pub enum DumpLine { Meta { cupti_version, cupti_path, note }, Record { flush, kind, hex, name },
//!                     Region { flush, span: RegionSpan } }             // JSON lines, "type" tag
//! pub struct RecordedBuffer { pub meta: Vec<DumpLine>, pub flushes: Vec<RecordedFlush> }
//! pub struct RecordedFlush { pub flush: u64, pub batch: ActivityBatch, pub regions: Vec<RegionSpan>, pub unparsed: usize }
//! impl RecordedBuffer { pub fn read_jsonl(path: &Path) -> Result<Self, EngineError> }
//!
//! // cupti::collector
//! impl ActivitySession {
//!     pub fn start(libs: &Libraries) -> Result<Self, EngineError>
//!     pub fn start_with(cupti: &'static Cupti) -> Result<Self, EngineError>
//!     pub fn timestamp_ns(&self) -> Result<u64, EngineError>
//!     pub fn push_external_id(&self, id: u64) -> Result<(), EngineError>
//!     pub fn pop_external_id(&self) -> Result<u64, EngineError>
//!     pub fn flush(&mut self) -> Result<ActivityBatch, EngineError>   // after a device sync
//!     pub fn record_regions(&self, regions: &[RegionSpan]) -> Result<(), EngineError> // fixture dump
//!     pub fn dump_path(&self) -> Option<PathBuf>
//!     pub fn stop(self) -> Result<(), EngineError> }                   // also on Drop
//! pub fn current_thread_id() -> u32                                    // gettid
//! pub enum LaunchRecords { KindMinusOthers /*default*/, PerCbid, WholeDriverKind }
//! impl ActivitySession { pub fn launch_records(&self) -> LaunchRecords }
//! env KPROF_CUPTI_LAUNCH_RECORDS=kind|cbid|kind-minus overrides (diagnostics)
//! env KPROF_RECORD_ACTIVITY=<file.jsonl>: every record is also appended there
//!
//! // attribution.rs (pure)
//! pub struct RegionSpan { pub id: u64, pub parent: Option<u64>, pub thread_id: u32, pub start_ns: u64, pub end_ns: u64 }
//! pub struct Attribution { pub by_region: HashMap<u64, Vec<KernelRecord>>, pub unattributed: Vec<KernelRecord>,
//!                          pub direct_via: HashMap<u64, (usize /*ext corr*/, usize /*timestamp*/)> }
//! impl Attribution { pub fn total_ns(&self, region: u64) -> u64 }
//! pub fn attribute(batch: &ActivityBatch, regions: &[RegionSpan]) -> Attribution
//! pub struct RegionKey { pub call: u32, pub config: u32, pub run: u32, pub region: u32 }
//! pub fn encode_region_key(call: u32, config: u32, run: u32, region: u32) -> Result<u64, EngineError>
//! pub fn decode_region_key(key: u64) -> RegionKey
//!
//! // nvtx.rs
//! pub fn validate_region_name(name: &str) -> Result<CString, EngineError>
//! pub fn push_range(name: &str) -> Result<NvtxRange, EngineError>   // ASCII domain "kprof"; pops on drop
//! pub fn push_range_cstr(name: CString) -> NvtxRange
//!
//! // settings.rs (every KPROF_* environment variable; docs/configuration.md)
//! pub struct EnvVar { pub name: &'static str, pub default: &'static str, pub meaning: &'static str,
//!                     pub read_by: &'static str }
//! pub const ENV_VARS: &[EnvVar]
//! pub fn lookup(name: &str) -> Option<&'static EnvVar>
//! pub fn active() -> Vec<(&'static EnvVar, String)>                  // the ones set, with their values
//! ```

pub use kprof_core as core;

/// kprof's version with the git revision it was built from, when known (`0.1.0+g1a2b3c4`, a PEP
/// 440 local version; plain `0.1.0` outside a git checkout). Set by `build.rs`; the
/// `KPROF_GIT_REV` environment variable at build time overrides git.
pub const VERSION: &str = env!("KPROF_VERSION_FULL");

pub mod attribution;

/// Locks a mutex, taking over its data if a thread panicked while holding it (kprof's shared
/// state stays valid across such panics: callbacks never leave it half-written).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
pub mod choices;
pub mod conditions;
pub mod counters;
pub mod cupti;
pub mod driver;
pub mod error;
pub mod loader;
pub mod ncu;
pub mod nvtx;
pub mod runner;
pub mod settings;

pub use attribution::{attribute, decode_region_key, encode_region_key, Attribution, RegionKey, RegionSpan};
pub use cupti::{ActivityBatch, ActivitySession, ApiRecord, ExternalCorrelationRecord, KernelRecord};
pub use driver::{DeviceProps, Driver};
pub use error::EngineError;
pub use loader::{Libraries, SearchEnv, Versions};
