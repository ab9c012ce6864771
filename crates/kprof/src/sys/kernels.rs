//! kprof's own device kernels: PTX images, each with an entry that takes exactly two parameters,
//! `(u64 device pointer, u64 count)`, which is what `DriverFns::launch_kernel` passes. Only the
//! kernels defined here can be loaded and launched, so the parameters always match.

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use super::driver::CuFunction;

/// A PTX image and the name of its entry (which takes `(u64, u64)`).
#[derive(Debug)]
pub struct PtxKernel {
    pub(super) image: &'static CStr,
    pub(super) entry: &'static CStr,
}

impl PtxKernel {
    /// The entry's name (the kernel name CUPTI and ncu report).
    pub fn name(&self) -> &'static str {
        self.entry.to_str().unwrap_or("")
    }

    /// The PTX text.
    pub fn image(&self) -> &'static str {
        self.image.to_str().unwrap_or("")
    }
}

/// A [`PtxKernel`] loaded into a context (`DriverFns::load_kernel`).
#[derive(Debug, Clone, Copy)]
pub struct LoadedKernel {
    pub(super) func: CuFunction,
}

// SAFETY: a CUfunction is a process-wide driver object, usable from any thread that has its
// context current; kprof only hands it back to the driver.
unsafe impl Send for LoadedKernel {}
// SAFETY: as for Send: shared use is only passing the handle to the driver.
unsafe impl Sync for LoadedKernel {}

/// The L2 flush's read kernel `kprof_l2_flush(buf, sectors)` (see `runner/l2_flush.rs`).
pub static L2_FLUSH_READ: PtxKernel = PtxKernel {
    image: READ_PTX,
    entry: c"kprof_l2_flush",
};

/// The L2 flush's discard kernel `kprof_l2_flush_discard(buf, lines)` (sm_80 and later).
pub static L2_FLUSH_DISCARD: PtxKernel = PtxKernel {
    image: DISCARD_PTX,
    entry: c"kprof_l2_flush_discard",
};

/// A C string made at compile time of string literals (and macros that give one), which must
/// hold no NUL.
macro_rules! c_concat {
    ($($part:expr),+ $(,)?) => {
        match CStr::from_bytes_with_nul(concat!($($part),+, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("a NUL inside the PTX"),
        }
    };
}

/// The head of a kernel `$entry(.u64 p_buf, .u64 $count)`, the parameters
/// `DriverFns::launch_kernel` passes, for PTX ISA `$version` on `$target`, with the registers
/// the kernels here use.
macro_rules! two_u64_entry {
    ($version:literal, $target:literal, $entry:literal, $count:literal) => {
        concat!(
            ".version ",
            $version,
            "\n.target ",
            $target,
            "\n.address_size 64\n.visible .entry ",
            $entry,
            "(.param .u64 p_buf, .param .u64 ",
            $count,
            ")
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
"
        )
    };
}

/// The start of a grid-stride loop over the `p_buf` parameter's `$count` items (the second
/// parameter) of `1 << $shift` bytes each: the buffer in `%rd1`, the count in `%rd2`, the
/// thread's first index in `%rd5` and the grid's stride in `%rd6`; a thread with no item goes to
/// `DONE`, the others into `LOOP`, where `%rd8` is the address of the current item.
macro_rules! grid_stride_loop_start {
    ($count:literal, $shift:literal) => {
        concat!(
            "    ld.param.u64 %rd1, [p_buf];
    ld.param.u64 %rd2, [",
            $count,
            "];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd3, %r1, %r2;
    cvt.u64.u32 %rd4, %r3;
    add.u64 %rd5, %rd3, %rd4;
    mul.wide.u32 %rd6, %r4, %r2;
    setp.ge.u64 %p1, %rd5, %rd2;
    @%p1 bra DONE;
LOOP:
    shl.b64 %rd7, %rd5, ",
            $shift,
            ";
    add.u64 %rd8, %rd1, %rd7;
"
        )
    };
}

/// The end of the loop [`grid_stride_loop_start`] starts: the next index, back to `LOOP` while
/// it is below the count, then `DONE`.
macro_rules! grid_stride_loop_end {
    () => {
        "    add.u64 %rd5, %rd5, %rd6;
    setp.lt.u64 %p2, %rd5, %rd2;
    @%p2 bra LOOP;
DONE:
"
    };
}

/// PTX of `kprof_l2_flush(buf, sectors)`: every thread reads one 32-byte sector per step of a
/// grid-stride loop (`ld.global.cg`: cached in L2 only) and stores nothing unless the xor of
/// everything it read equals a magic value, which keeps the loads alive through the JIT.
const READ_PTX: &CStr = c_concat!(
    two_u64_entry!("7.0", "sm_52", "kprof_l2_flush", "p_sectors"),
    "    mov.u32 %r5, 0;\n",
    grid_stride_loop_start!("p_sectors", "5"),
    "    ld.global.cg.u32 %r6, [%rd8];
    xor.b32 %r5, %r5, %r6;
",
    grid_stride_loop_end!(),
    "    setp.eq.u32 %p1, %r5, 1515870810;
    @%p1 st.global.u32 [%rd1], %r5;
    ret;
}
",
);

/// PTX of `kprof_l2_flush_discard(buf, lines)`: every thread drops one 128-byte line of the
/// buffer from the L2 per step of a grid-stride loop (`discard.global.L2`: no write-back; the
/// buffer's contents do not matter).
const DISCARD_PTX: &CStr = c_concat!(
    two_u64_entry!("7.4", "sm_80", "kprof_l2_flush_discard", "p_lines"),
    grid_stride_loop_start!("p_lines", "7"),
    "    discard.global.L2 [%rd8], 128;
",
    grid_stride_loop_end!(),
    "    ret;
}
",
);

/// Steps of the instruction-cache flush kernel: about 12,000 SASS instructions (about 190 KB of
/// code), more than an SM's instruction caches hold. Measured on the H200 (2026-12-02,
/// `truth_check icachesize`, DRAM bytes a cuBLAS sgemm 1024 read after the flush): 4096 steps
/// empty the caches as 8192 do (8,458,752 and 8,458,624 bytes, ncu 8.460 MB), 2048 steps not
/// quite (8,455,424), 1024 hardly (8,399,872; no flush 8,396,288), at half the cost of 8192 (98
/// instead of 191 µs of GPU time, 0.70 instead of 1.71 s to JIT).
pub const INSTRUCTION_FLUSH_STEPS: usize = 4096;

/// The cold-cache flush's instruction kernel `kprof_l2_flush_instructions(buf, unused)`: straight-line
/// code larger than an SM's instruction caches, which every SM that runs it fetches, so that the
/// next kernel's code is fetched again from memory, as after ncu's `--cache-control all` (see
/// `runner/l2_flush.rs`). Generated once, at first use.
pub fn instruction_flush() -> &'static PtxKernel {
    static KERNEL: OnceLock<PtxKernel> = OnceLock::new();
    KERNEL.get_or_init(|| PtxKernel {
        // The generated text holds no NUL; an empty image (never) would fail to load, with a warning.
        image: Box::leak(
            CString::new(instruction_flush_ptx(INSTRUCTION_FLUSH_STEPS))
                .unwrap_or_default()
                .into_boxed_c_str(),
        ),
        entry: c"kprof_l2_flush_instructions",
    })
}

/// PTX of `kprof_l2_flush_instructions`: `steps` dependent xor-shift-add steps on a register (no
/// step can be folded into another), stored only if the result equals a magic value, which keeps
/// the code alive through the JIT. [`instruction_flush`] uses [`INSTRUCTION_FLUSH_STEPS`]; other
/// sizes are for the GPU checks that choose it.
pub fn instruction_flush_ptx(steps: usize) -> String {
    let mut ptx = String::with_capacity(steps * 100 + 1024);
    ptx.push_str(two_u64_entry!(
        "7.0",
        "sm_52",
        "kprof_l2_flush_instructions",
        "p_unused"
    ));
    ptx.push_str("    ld.param.u64 %rd1, [p_buf];\n    mov.u32 %r1, %tid.x;\n");
    for i in 0..steps {
        let k = 2_654_435_761u32.wrapping_mul(i as u32 + 1);
        ptx.push_str(&format!(
            "    shr.u32 %r2, %r1, 13;\n    xor.b32 %r1, %r1, %r2;\n    add.u32 %r1, %r1, {k};\n"
        ));
    }
    ptx.push_str("    setp.eq.u32 %p1, %r1, 1515870810;\n    @%p1 st.global.u32 [%rd1], %r1;\n    ret;\n}\n");
    ptx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What makes `DriverFns::launch_kernel` sound: every kernel here has
    /// one entry, named as declared, with exactly the parameters `(.u64, .u64)`.
    #[test]
    fn every_kernel_takes_two_u64_parameters() {
        for k in [&L2_FLUSH_READ, &L2_FLUSH_DISCARD, instruction_flush()] {
            let ptx = k.image();
            assert_eq!(ptx.matches(".entry").count(), 1, "{}", k.name());
            let decl = ptx.split(".entry ").nth(1).unwrap();
            let (name, rest) = decl.split_once('(').unwrap();
            assert_eq!(name.trim(), k.name());
            let params: Vec<&str> = rest.split_once(')').unwrap().0.split(',').map(str::trim).collect();
            assert_eq!(params.len(), 2, "{}: {params:?}", k.name());
            assert!(
                params.iter().all(|p| p.starts_with(".param .u64 ")),
                "{}: {params:?}",
                k.name()
            );
        }
    }

    #[test]
    fn instruction_flush_is_straight_line_code_kept_alive_by_a_store() {
        let ptx = instruction_flush().image();
        assert_eq!(ptx.matches("xor.b32 %r1, %r1, %r2;").count(), INSTRUCTION_FLUSH_STEPS);
        assert!(!ptx.contains("bra"), "no loop: every step is its own code");
        assert!(ptx.contains("@%p1 st.global.u32 [%rd1], %r1;"));
        // Distinct constants, so that no two steps are the same instruction words.
        let adds: std::collections::HashSet<&str> = ptx.lines().filter(|l| l.contains("add.u32 %r1")).collect();
        assert_eq!(adds.len(), INSTRUCTION_FLUSH_STEPS);
    }
}
