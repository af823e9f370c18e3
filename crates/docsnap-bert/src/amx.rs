//! The 8-bit product on Intel AMX's tile unit (Sapphire Rapids and later).
//!
//! Why: on the VNNI kernels a page's matrix products were a third of its
//! forward pass, at about one `dpbusd` per cycle. One AMX `tdpbusd`
//! multiplies a 16 × 64 tile of token bytes by a 64 × 16 tile of weights
//! (16,384 products into i32), so the same sums take a fraction of the
//! instructions.
//!
//! The weights are packed by [`super::pack_lanes`] in blocks of 16 output
//! columns (groups of 4 values of `k` for the 16 columns, 64 bytes), which
//! is the layout a tile of `B` wants: 16 consecutive groups of a block are
//! one 16-row × 64-byte tile. The activations are VNNI's (bytes shifted
//! by 128). The sums are exact integers, taken off the shift and converted
//! to f32 as the VNNI kernels do, so the outputs are bit-identical (tested
//! against them). Reading VNNI's blocks of 8 columns instead, half-width
//! tiles, left the products at a fifth of a page's pass.
//!
//! The instructions are written in inline assembly: Rust's AMX intrinsics
//! are not stable. Linux hands a process the tile state only on request
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM)`); [`available`] asks once, and says
//! no where the CPU, the kernel or the OS does not have it.

use std::arch::asm;
use std::ops::Range;
use std::sync::OnceLock;

/// Rows of a tile: tokens per tile of `A` and `C`, groups of 4 values of
/// `k` per tile of `B`.
const ROWS: usize = 16;
/// Values of `k` per tile of `A`: 16 rows × 4 bytes of `B`.
const K_STEP: usize = 64;
/// Output columns per tile of `C` (a block of [`super::pack_lanes`]).
const COLS: usize = 16;

/// `ldtilecfg`'s 64-byte operand (palette 1).
#[repr(C, align(64))]
struct Config {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

impl Config {
    /// Tile 4 holds `first` tokens (× 64 bytes) and tiles 0–1 their sums
    /// (× 16 i32), tile 5 and tiles 2–3 the same for `second` tokens (at
    /// least one row, unused when there are none), 6–7 weights (16 groups
    /// × 16 columns × 4 bytes).
    fn new(first: usize, second: usize) -> Config {
        debug_assert!((1..=ROWS).contains(&first) && second <= ROWS);
        let second = second.max(1);
        let mut c = Config {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            colsb: [0; 16],
            rows: [0; 16],
        };
        for (t, rows) in [(0, first), (1, first), (2, second), (3, second)] {
            c.colsb[t] = (COLS * 4) as u16;
            c.rows[t] = rows as u8;
        }
        for (t, rows) in [(4, first), (5, second)] {
            c.colsb[t] = K_STEP as u16;
            c.rows[t] = rows as u8;
        }
        for t in 6..8 {
            c.colsb[t] = (COLS * 4) as u16;
            c.rows[t] = ROWS as u8;
        }
        c
    }
}

/// Whether this process may run the tile kernel (checked once): the CPU
/// has AMX-TILE and AMX-INT8, `DOCSNAP_BERT_ISA` does not cap it below, and
/// Linux granted the tile state (not asked for under a lower cap).
pub fn available() -> bool {
    static YES: OnceLock<bool> = OnceLock::new();
    *YES.get_or_init(|| {
        // CPUID.(EAX=7, ECX=0):EDX bit 24 AMX-TILE, bit 25 AMX-INT8.
        #[allow(unused_unsafe)]
        // SAFETY: CPUID exists on every x86-64 CPU.
        let leaf = unsafe { std::arch::x86_64::__cpuid_count(7, 0) };
        let cpu = leaf.edx & (1 << 24) != 0 && leaf.edx & (1 << 25) != 0;
        super::isa_cap() >= super::Isa::Amx && cpu && request_tile_state()
    })
}

/// Asks Linux for the tile data state (XTILEDATA, feature 18) for the
/// whole process; false where the kernel refuses or predates it (5.16).
#[cfg(target_os = "linux")]
fn request_tile_state() -> bool {
    const SYS_ARCH_PRCTL: usize = 158;
    const ARCH_REQ_XCOMP_PERM: usize = 0x1023;
    const XFEATURE_XTILEDATA: usize = 18;
    let ret: isize;
    // SAFETY: arch_prctl with this request only changes which extended
    // states the process may use; it reads and writes no memory of ours.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") SYS_ARCH_PRCTL as isize => ret,
            in("rdi") ARCH_REQ_XCOMP_PERM,
            in("rsi") XFEATURE_XTILEDATA,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret == 0
}

#[cfg(not(target_os = "linux"))]
fn request_tile_state() -> bool {
    false
}

/// Columns `cols` of `y = x wᵀ`, unscaled: the contract of the VNNI
/// kernels (`super::simd::VnniKernel`), for `k` a multiple of 64 and
/// weights packed 16 columns to a block.
///
/// # Safety
/// [`available`] returned true; `xp` holds `m × k` shifted bytes, `wp`
/// `n × k` weights packed by `pack_lanes(…, 4, 16)`, `wsum` their `n` row
/// sums; `yp` points at `m × n` values no one else touches in `cols`;
/// `cols` starts at a multiple of 16 and ends at one or at `n`, itself a
/// multiple of 16.
#[allow(clippy::too_many_arguments)]
pub unsafe fn cols(
    xp: *const u8,
    m: usize,
    wp: *const i8,
    wsum: &[i32],
    n: usize,
    k: usize,
    yp: *mut f32,
    cols: Range<usize>,
) {
    debug_assert!(k.is_multiple_of(K_STEP) && n.is_multiple_of(COLS));
    debug_assert!(cols.start.is_multiple_of(COLS) && cols.end <= n);
    let groups = k / 4;
    let (first, end) = (cols.start / COLS, cols.end.div_ceil(COLS));
    // Tokens go two tiles at a time, the last pair's tiles as high as
    // the tokens left: a question of 17 to 32 tokens reads the weights
    // once, not once per tile (for a question, reading the weights is
    // most of a product's time).
    let mut loaded = None;
    let mut i = 0;
    while i < m {
        let rows0 = (m - i).min(ROWS);
        let rows1 = (m - i - rows0).min(ROWS);
        if loaded != Some((rows0, rows1)) {
            let config = Config::new(rows0, rows1);
            // SAFETY: the tile state was granted (`available`); the
            // configuration is a valid palette-1 layout.
            unsafe { asm!("ldtilecfg [{}]", in(reg) &config, options(nostack, readonly)) };
            loaded = Some((rows0, rows1));
        }
        let mut b = first;
        while b < end {
            let pair = b + 1 < end;
            // SAFETY: rows i..i + rows0 + rows1 and blocks b..b + 1 (+ 1)
            // are within x, w and y by the contract.
            unsafe { block(xp, wp, wsum, i, [rows0, rows1], b, pair, groups, k, yp, n) };
            b += if pair { 2 } else { 1 };
        }
        i += rows0 + rows1;
    }
    // SAFETY: releases the tiles this call configured.
    unsafe { asm!("tilerelease", options(nostack, nomem)) };
}

/// Tokens `i..` in two tiles of `rows[0]` and `rows[1]` (the second
/// absent when 0; the first 16 high when there is a second) against
/// column block `b` (and `b + 1` when `pair`): sums in tiles 0–3, `k`
/// walked 64 values at a time, then written to `y` less the shift.
///
/// # Safety
/// The tiles are configured for `rows`; the rest as [`cols`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn block(
    xp: *const u8,
    wp: *const i8,
    wsum: &[i32],
    i: usize,
    rows: [usize; 2],
    b: usize,
    pair: bool,
    groups: usize,
    k: usize,
    yp: *mut f32,
    n: usize,
) {
    let two = rows[1] > 0;
    // SAFETY (every asm block below): tile operands as configured; loads
    // read rows of x (stride k) and 16 groups of a weight block (stride
    // 64), all within the caller's buffers; stores write `sums` only.
    unsafe {
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            options(nostack, nomem)
        );
        let stride_x = k;
        let stride_w = COLS * 4;
        for step in 0..k / K_STEP {
            let a0 = xp.add(i * k + step * K_STEP);
            let w0 = wp.add((b * groups + step * ROWS) * COLS * 4);
            asm!(
                "tileloadd tmm4, [{a} + {sa}*1]",
                "tileloadd tmm6, [{w} + {sw}*1]",
                "tdpbusd tmm0, tmm4, tmm6",
                a = in(reg) a0,
                sa = in(reg) stride_x,
                w = in(reg) w0,
                sw = in(reg) stride_w,
                options(nostack, readonly)
            );
            if pair {
                let w1 = wp.add(((b + 1) * groups + step * ROWS) * COLS * 4);
                asm!(
                    "tileloadd tmm7, [{w} + {sw}*1]",
                    "tdpbusd tmm1, tmm4, tmm7",
                    w = in(reg) w1,
                    sw = in(reg) stride_w,
                    options(nostack, readonly)
                );
            }
            if two {
                let a1 = a0.add(ROWS * k);
                asm!(
                    "tileloadd tmm5, [{a} + {sa}*1]",
                    "tdpbusd tmm2, tmm5, tmm6",
                    a = in(reg) a1,
                    sa = in(reg) stride_x,
                    options(nostack, readonly)
                );
                if pair {
                    asm!("tdpbusd tmm3, tmm5, tmm7", options(nostack, nomem));
                }
            }
        }
        let mut sums = [[0i32; COLS]; 4 * ROWS];
        let s = sums.as_mut_ptr() as *mut i32;
        let stride = COLS * 4;
        asm!(
            "tilestored [{s} + {st}*1], tmm0",
            "tilestored [{s1} + {st}*1], tmm1",
            "tilestored [{s2} + {st}*1], tmm2",
            "tilestored [{s3} + {st}*1], tmm3",
            s = in(reg) s,
            s1 = in(reg) s.add(ROWS * COLS),
            s2 = in(reg) s.add(2 * ROWS * COLS),
            s3 = in(reg) s.add(3 * ROWS * COLS),
            st = in(reg) stride,
            options(nostack)
        );
        let tiles_cols = if pair { 2 } else { 1 };
        for (tr, &height) in rows.iter().enumerate().filter(|(_, &r)| r > 0) {
            for tc in 0..tiles_cols {
                let tile = &sums[(tr * 2 + tc) * ROWS..][..height];
                let col = (b + tc) * COLS;
                let shift = &wsum[col..col + COLS];
                for (r, sum) in tile.iter().enumerate() {
                    let y = yp.add((i + tr * ROWS + r) * n + col);
                    for c in 0..COLS {
                        // The shift's share off, then to f32: as `exact`
                        // and the store of the VNNI kernels.
                        *y.add(c) = sum[c].wrapping_sub(shift[c] << 7) as f32;
                    }
                }
            }
        }
    }
}
