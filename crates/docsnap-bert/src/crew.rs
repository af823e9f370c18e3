//! Two threads through one forward pass, meeting between products by
//! spinning instead of through rayon's sleep and wake.
//!
//! Why: a question's pass is 24 matrix products of 50–250 µs each. Handed to
//! rayon one by one, the other thread falls asleep between them and each
//! product paid a futex wake and a steal (on 2 cores the split pass took
//! 3.1–3.2 ms where one core took 3.9). A crew is formed once per pass: the
//! helper, started as one rayon job, stays and waits for each product's
//! column chunks by polling one atomic word, so each hand-off costs a cache
//! line's round trip.
//!
//! Nothing waits on the helper unless it has claimed a chunk: if it starts
//! late, or never (both threads busy with passes of their own), the caller
//! claims every chunk itself and the pass runs on one thread, as fast as it
//! would alone. Which thread computes a chunk never changes its bits.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// A chunk's work: computes chunk `i` of the current product.
type Job<'a> = &'a (dyn Fn(usize) + Sync);

/// The shared state of a pass's threads.
pub(crate) struct Crew {
    /// `epoch << 32 | chunks << 16 | next`: which product is posted, in how
    /// many chunks, and the next unclaimed one, in one word so that a claim
    /// can never take a chunk of a product other than the one it read.
    work: AtomicU64,
    /// The posted product's [`Job`] (a pointer to it on the caller's
    /// stack), valid while any of its chunks is unfinished.
    job: AtomicPtr<()>,
    /// Chunks of the posted product finished, by either thread.
    done: AtomicUsize,
    /// Set when the pass is over (or unwinding): the helper leaves.
    over: AtomicBool,
}

/// Polls of a waiting helper between yields of its core: ~100 µs of
/// spinning covers the serial work between two products (attention,
/// LayerNorm) without giving the core away; past that, the caller is
/// probably descheduled and the helper yields.
const SPINS_BEFORE_YIELD: u32 = 1 << 14;

impl Crew {
    pub(crate) fn new() -> Crew {
        Crew {
            work: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            done: AtomicUsize::new(0),
            over: AtomicBool::new(false),
        }
    }

    /// Runs `job` on chunks `0..chunks`, on this thread and on the helper if
    /// it is there, and returns when every chunk is done. Called by the
    /// pass's own thread only, one product at a time.
    pub(crate) fn share(&self, chunks: usize, job: &(dyn Fn(usize) + Sync)) {
        assert!(chunks < 1 << 16, "{chunks} chunks");
        let job: Job = job;
        let at: *const Job = &job;
        self.job.store(at as *mut (), Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        let epoch = (self.work.load(Ordering::Relaxed) >> 32) + 1;
        // Release: the job and the reset count are seen by whoever sees
        // the new epoch.
        self.work
            .store(epoch << 32 | (chunks as u64) << 16, Ordering::Release);
        while let Some(i) = self.claim(epoch) {
            job(i);
            self.done.fetch_add(1, Ordering::Release);
        }
        // Only chunks the helper has claimed are left: it is running them.
        while self.done.load(Ordering::Acquire) < chunks {
            std::hint::spin_loop();
        }
    }

    /// Takes the next chunk of product `epoch`, if any is left.
    fn claim(&self, epoch: u64) -> Option<usize> {
        let mut w = self.work.load(Ordering::Acquire);
        loop {
            let (chunks, next) = ((w >> 16) & 0xffff, w & 0xffff);
            if w >> 32 != epoch || next >= chunks {
                return None;
            }
            match self
                .work
                .compare_exchange_weak(w, w + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(next as usize),
                Err(now) => w = now,
            }
        }
    }

    /// The helper's side: claims chunks of every product posted until the
    /// pass is over.
    pub(crate) fn help(&self) {
        let mut served = 0;
        let mut idle = 0u32;
        while !self.over.load(Ordering::Acquire) {
            let epoch = self.work.load(Ordering::Acquire) >> 32;
            if epoch == served {
                idle += 1;
                if idle < SPINS_BEFORE_YIELD {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
                continue;
            }
            idle = 0;
            while let Some(i) = self.claim(epoch) {
                // Counted even if the job unwinds, so that the caller is
                // not left waiting; rayon carries the panic on.
                let _count = Finished(&self.done);
                // SAFETY: the pointer was stored before the epoch we
                // claimed in was published, and the caller keeps the job
                // alive until this chunk is counted.
                let job = unsafe { *(self.job.load(Ordering::Relaxed) as *const Job) };
                job(i);
            }
            served = epoch;
        }
    }

    /// Ends the pass for the helper when dropped (also on unwinding).
    pub(crate) fn over_on_drop(&self) -> impl Drop + '_ {
        struct Over<'a>(&'a AtomicBool);
        impl Drop for Over<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        Over(&self.over)
    }
}

/// Counts a chunk as done when dropped.
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Every chunk of every product runs exactly once, whether the helper
    /// joins at once, late, or never.
    #[test]
    fn every_chunk_runs_once() {
        for helper in [true, false] {
            let crew = Crew::new();
            let seen = Mutex::new(Vec::new());
            std::thread::scope(|s| {
                if helper {
                    s.spawn(|| crew.help());
                }
                let _over = crew.over_on_drop();
                for product in 0..200usize {
                    let chunks = 1 + product % 5;
                    crew.share(chunks, &|i| seen.lock().unwrap().push((product, i)));
                }
            });
            let mut seen = seen.into_inner().unwrap();
            seen.sort();
            let want: Vec<(usize, usize)> = (0..200usize)
                .flat_map(|p| (0..1 + p % 5).map(move |i| (p, i)))
                .collect();
            assert_eq!(seen, want, "helper {helper}");
        }
    }

    /// A helper that arrives after the pass is over leaves at once.
    #[test]
    fn a_late_helper_leaves() {
        let crew = Crew::new();
        {
            let _over = crew.over_on_drop();
            crew.share(3, &|_| {});
        }
        crew.help();
        assert_eq!(crew.done.load(Ordering::Relaxed), 3);
    }
}
