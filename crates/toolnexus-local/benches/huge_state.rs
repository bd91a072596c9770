//! What one huge state costs the zero-shot style: time and peak heap of one
//! decision on a 50 MB state against a 10 KB one, for a JSON string state and
//! for a JSON object state. The state is built before the measurement; the
//! peak is the most heap the decision held above what was live when it
//! started (a counting allocator). Needs the model (`toolnexus model fetch`)
//! and says so otherwise.
//!
//! `cargo bench -p toolnexus-local --bench huge_state`. Run by `cargo test`
//! (without `--bench`), it only checks that it runs, on the tiny test model.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolnexus::classifier::{EnvSource, Questions, choice_over};
use toolnexus_local::{Embedder, ZeroShot, model_dir};

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let grown = new_size - layout.size();
                let now = LIVE.fetch_add(grown, Ordering::Relaxed) + grown;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const LINE: &str = "I was charged twice for the same order, please refund one of them. ";

/// A string state of about `bytes` bytes.
fn text_state(bytes: usize) -> Value {
    json!(LINE.repeat(bytes / LINE.len() + 1))
}

/// An object state of about `bytes` bytes of canonical JSON: a log of messages.
fn object_state(bytes: usize) -> Value {
    let entry = json!({"from": "customer", "message": LINE});
    let per = toolnexus::classifier::canonical_json(&entry).len() + 1;
    json!({"ticket": 7, "log": vec![entry; bytes / per + 1]})
}

/// Median time and peak heap above the start of `runs` decisions.
fn measure(local: &ZeroShot, state: &Value, qs: &Questions, runs: usize) -> (Duration, usize) {
    local.decide(state, qs).unwrap();
    let mut times = Vec::with_capacity(runs);
    let mut peak = 0;
    for _ in 0..runs {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let d = local.decide(state, qs).unwrap();
        times.push(t.elapsed());
        drop(d);
        peak = peak.max(PEAK.load(Ordering::Relaxed) - base);
    }
    times.sort();
    (times[times.len() / 2], peak)
}

fn questions() -> Questions {
    Questions::from([(
        "desk".to_string(),
        choice_over(
            "Which desk owns this ticket?",
            [
                ("billing", "money moved: a double charge, a refund owed"),
                ("shipping", "a physical parcel is late or damaged"),
                ("account", "login, password or profile trouble"),
            ],
        )
        .into(),
    )])
}

fn report(local: &ZeroShot, small: usize, large: usize, runs: usize) {
    let qs = questions();
    for (kind, make) in [
        ("string", text_state as fn(usize) -> Value),
        ("object", object_state),
    ] {
        let (small_state, large_state) = (make(small), make(large));
        let (t_small, m_small) = measure(local, &small_state, &qs, runs);
        let (t_large, m_large) = measure(local, &large_state, &qs, runs);
        println!(
            "{kind} state {} KB: {:.2} ms, peak +{:.1} KB | {} MB: {:.2} ms, peak +{:.1} KB | \
             ratio time {:.2}, memory {:.2}",
            small / 1000,
            t_small.as_secs_f64() * 1e3,
            m_small as f64 / 1e3,
            large / 1_000_000,
            t_large.as_secs_f64() * 1e3,
            m_large as f64 / 1e3,
            t_large.as_secs_f64() / t_small.as_secs_f64(),
            m_large as f64 / m_small.max(1) as f64,
        );
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        smoke();
        return;
    }
    let dir = match model_dir(None, &EnvSource::process()) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("huge_state bench: {e}");
            return;
        }
    };
    let e = match Embedder::load(&dir) {
        Ok(e) => e,
        Err(err) => {
            eprintln!("huge_state bench skipped: {err}");
            return;
        }
    };
    report(&ZeroShot::new(e), 10_000, 50_000_000, 9);
}

/// Under `cargo test`: runs once on the tiny model, on small states.
fn smoke() {
    let dir =
        std::env::temp_dir().join(format!("toolnexus-huge-state-bench-{}", std::process::id()));
    toolnexus_local::tiny_model_for_tests(&dir).unwrap();
    let e = Embedder::load(&dir).unwrap();
    report(&ZeroShot::new(e), 10_000, 1_000_000, 1);
    std::fs::remove_dir_all(&dir).ok();
}
