//! The spans' way to the collector when our own OTLP writer is in use: each
//! sampled span is written as OTLP protobuf on the calling thread, straight
//! from what the call knows, and appended to a bounded queue of bytes that
//! one thread of ours posts in batches.
//!
//! The SDK's way builds a `KeyValue` (and a `Vec`) per attribute, a
//! `SpanData` per span, and hands it across threads to its batch processor,
//! whose thread encodes it and frees memory the calling threads allocated
//! (in glibc, behind their arenas' locks). Here a span is one buffer, written
//! once and copied into the queue; what crosses threads is bytes. What the
//! SDK decides is kept: its sampler and ids (`spans.rs`), its span limits
//! (the attributes and events past them are dropped and counted as it counts
//! them), its resource and scope, and its batch settings (`OTEL_BSP_*`, read
//! by its rules): a full queue drops the span and never blocks, a batch
//! leaves every `OTEL_BSP_SCHEDULE_DELAY` or as soon as
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans wait, and each post is bounded by
//! `OTEL_BSP_EXPORT_TIMEOUT`. The bytes are those the SDK's exporter writes
//! for the same span (tested).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

use bytes::Bytes;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};

use super::attributes::{Repeated, Sink, Text, write_guard_attributes};
use super::delivery::Notice;
use super::otlp::{self, LEN, field_len};
use crate::classifier::GuardVerdict;

/// The name of each answer's event (GenAI semantic conventions).
pub(super) const EVALUATION_RESULT: &str = "gen_ai.evaluation.result";

/// How many attributes a message keeps, and how many it dropped past that
/// (the SDK's span limits: the first ones are kept).
#[derive(Debug, Clone, Copy)]
pub(super) struct Kept {
    n: usize,
    limit: usize,
    dropped: u32,
}

impl Kept {
    fn new(limit: u32) -> Kept {
        Kept {
            n: 0,
            limit: limit as usize,
            dropped: 0,
        }
    }

    /// Whether `n` more attributes all fit under the limit.
    fn fits(&self, n: usize) -> bool {
        self.n + n <= self.limit
    }

    /// Whether one more attribute is kept; counted as dropped if not.
    fn admit(&mut self) -> bool {
        if self.n < self.limit {
            self.n += 1;
            true
        } else {
            self.dropped = self.dropped.saturating_add(1);
            false
        }
    }
}

/// Attributes written as OTLP `KeyValue` messages, field `field` of the
/// message being written, within its limit.
pub(super) struct Proto<'a> {
    out: &'a mut Vec<u8>,
    field: u32,
    kept: &'a mut Kept,
}

impl Proto<'_> {
    /// Writes one attribute whose `AnyValue` body, `len` bytes, `value`
    /// writes: every length is known before it is written, so no byte is
    /// moved afterwards. Nothing when the limit drops it.
    #[inline]
    fn known(&mut self, key: &str, len: usize, value: impl FnOnce(&mut Vec<u8>)) {
        if !self.kept.admit() {
            return;
        }
        let out = &mut *self.out;
        let kv = field_len(key.len()) + field_len(len);
        if kv < 0x80 && self.field < 16 {
            // Every length one byte (the key and the value are shorter
            // than the whole): the heads in two writes.
            out.reserve(2 + kv);
            let tag = (self.field << 3) as u8 | LEN;
            out.extend_from_slice(&[tag, kv as u8, 1 << 3 | LEN, key.len() as u8]);
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(&[2 << 3 | LEN, len as u8]);
            value(out);
            return;
        }
        out.reserve(1 + otlp::varint_len(kv) + kv);
        otlp::key(out, self.field, LEN);
        otlp::varint(out, kv as u64);
        otlp::string_always(out, 1, key);
        otlp::key(out, 2, LEN);
        otlp::varint(out, len as u64);
        value(out);
    }

    /// One attribute the SDK's API made (the sampler's).
    fn key_value(&mut self, kv: &KeyValue) {
        if self.kept.admit() {
            otlp::key_value(self.out, self.field, kv);
        }
    }
}

/// Attributes a thread wrote once and gives again: what they depend on
/// (`K`), the field they were written as, their bytes and how many.
struct Written<K> {
    field: u32,
    of: K,
    bytes: Vec<u8>,
    count: usize,
}

/// A thread's [`Written`] attributes, the oldest first.
type Cache<K> = RefCell<Vec<Written<K>>>;

/// What a span's repeated attributes ([`Repeated`]) depend on, owned.
struct RepeatedOwned {
    style: String,
    asked: String,
    local: bool,
    endpoint: Option<String>,
    call_name: String,
}

impl RepeatedOwned {
    fn is(&self, of: &Repeated<'_>) -> bool {
        self.local == of.local
            && self.style == of.style
            && self.asked == of.asked
            && self.call_name == of.call_name
            && self.endpoint.as_deref() == of.endpoint
    }
}

/// What an event's head (its question's key and its answer's type)
/// depends on, owned.
struct HeadOwned {
    answer_type: &'static str,
    key: Box<str>,
}

thread_local! {
    /// The repeated attributes a thread wrote for its last few classifiers.
    static REPEATED: Cache<RepeatedOwned> = const { RefCell::new(Vec::new()) };
    /// The event heads a thread wrote for its last questions.
    static HEADS: Cache<HeadOwned> = const { RefCell::new(Vec::new()) };
}

/// How many sets of repeated attributes a thread keeps.
const REPEATED_KEPT: usize = 8;

/// How many event heads a thread keeps: past them (more questions than
/// that in turn) the oldest gives way.
const HEADS_KEPT: usize = 64;

impl Proto<'_> {
    /// Gives the bytes this thread wrote for this field and what `is`
    /// finds again, when they all fit under the limit; else writes them
    /// with `write`, and keeps them under `own()` if none was dropped (the
    /// oldest of `kept` giving way).
    fn given_again<K: 'static>(
        &mut self,
        cache: &'static std::thread::LocalKey<Cache<K>>,
        kept: usize,
        is: impl Fn(&K) -> bool,
        own: impl FnOnce() -> K,
        write: impl FnOnce(&mut Self),
    ) {
        let field = self.field;
        let found = |w: &Written<K>| w.field == field && is(&w.of);
        let given = cache
            .try_with(|w| {
                let w = w.borrow();
                let Some(hit) = w.iter().find(|x| found(x)) else {
                    return false;
                };
                if !self.kept.fits(hit.count) {
                    return false;
                }
                self.out.extend_from_slice(&hit.bytes);
                self.kept.n += hit.count;
                true
            })
            .unwrap_or(false);
        if given {
            return;
        }
        let (start, before, dropped) = (self.out.len(), self.kept.n, self.kept.dropped);
        write(self);
        if self.kept.dropped != dropped {
            return;
        }
        let written = Written {
            field,
            of: own(),
            bytes: self.out[start..].to_vec(),
            count: self.kept.n - before,
        };
        let _ = cache.try_with(move |w| {
            let mut w = w.borrow_mut();
            w.retain(|x| !found(x));
            if w.len() >= kept {
                w.remove(0);
            }
            w.push(written);
        });
    }
}

impl Sink for Proto<'_> {
    /// Gives the bytes this thread wrote for the same `of` again, when they
    /// all fit under the limit; else writes them, and keeps them if none
    /// was dropped.
    fn repeated(&mut self, of: &Repeated<'_>, write: impl FnOnce(&mut Self)) {
        self.given_again(
            &REPEATED,
            REPEATED_KEPT,
            |x| x.is(of),
            || RepeatedOwned {
                style: of.style.to_string(),
                asked: of.asked.to_string(),
                local: of.local,
                endpoint: of.endpoint.map(str::to_string),
                call_name: of.call_name.to_string(),
            },
            write,
        );
    }

    /// As [`Sink::repeated`], for the question `key` and `answer_type`.
    fn event_head(&mut self, key: &str, answer_type: &'static str, write: impl FnOnce(&mut Self)) {
        self.given_again(
            &HEADS,
            HEADS_KEPT,
            |x| x.answer_type == answer_type && *x.key == *key,
            || HeadOwned {
                answer_type,
                key: key.into(),
            },
            write,
        );
    }

    fn text(&mut self, key: &'static str, value: Text<'_>) {
        let v = value.as_str();
        self.known(key, field_len(v.len()), |out| {
            if v.len() < 0x80 {
                out.extend_from_slice(&[1 << 3 | LEN, v.len() as u8]);
                out.extend_from_slice(v.as_bytes());
            } else {
                otlp::string_always(out, 1, v);
            }
        });
    }

    fn flag(&mut self, key: &'static str, value: bool) {
        self.known(key, 2, |out| otlp::bool_always(out, value));
    }

    fn int(&mut self, key: &'static str, value: i64) {
        // Two's complement, as protobuf writes a negative int64.
        let len = 1 + otlp::varint_len(value as u64 as usize);
        self.known(key, len, |out| otlp::int_always(out, value));
    }

    fn float(&mut self, key: &'static str, value: f64) {
        self.known(key, 9, |out| otlp::double_always(out, value));
    }

    fn texts<'a, I>(&mut self, key: &'static str, values: I)
    where
        I: Iterator<Item = &'a str> + Clone,
    {
        // `ArrayValue` (field 5 of `AnyValue`): an `AnyValue` per item,
        // each a string (field 1); every length counted first.
        let item = |v: &str| field_len(field_len(v.len()));
        let array: usize = values.clone().map(item).sum();
        self.known(key, field_len(array), |out| {
            otlp::key(out, 5, LEN);
            otlp::varint(out, array as u64);
            for v in values {
                let item = field_len(v.len());
                if item < 0x80 {
                    // Both lengths one byte: the heads in one write.
                    let tag = 1 << 3 | LEN;
                    out.extend_from_slice(&[tag, item as u8, tag, v.len() as u8]);
                    out.extend_from_slice(v.as_bytes());
                } else {
                    otlp::key(out, 1, LEN);
                    otlp::varint(out, item as u64);
                    otlp::string_always(out, 1, v);
                }
            }
        });
    }

    fn floats<I>(&mut self, key: &'static str, values: I)
    where
        I: Iterator<Item = f64> + Clone,
    {
        // Each item an `AnyValue` of 9 bytes (a double, field 4), 11 with
        // its key and length.
        let array = 11 * values.clone().count();
        self.known(key, field_len(array), |out| {
            otlp::key(out, 5, LEN);
            otlp::varint(out, array as u64);
            for v in values {
                let mut item = [0; 11];
                item[..2].copy_from_slice(&[1 << 3 | LEN, 9]);
                item[2..].copy_from_slice(&otlp::double(v));
                out.extend_from_slice(&item);
            }
        });
    }
}

/// The SDK's span limits, as `spans.rs` read them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) attributes: u32,
    pub(super) events: u32,
    pub(super) per_event: u32,
}

/// What a sampled span is before its attributes: ids, name, times, status.
#[derive(Debug)]
pub(super) struct Head {
    pub(super) trace_id: [u8; 16],
    pub(super) span_id: [u8; 8],
    /// The W3C trace state the sampler gave, as its header.
    pub(super) trace_state: String,
    /// The remote parent's span id.
    pub(super) parent: Option<[u8; 8]>,
    /// The span's trace flags.
    pub(super) flags: u8,
    pub(super) name: Cow<'static, str>,
    /// The OTLP `SpanKind` number.
    pub(super) kind: u64,
    /// Start and end, nanoseconds since the epoch.
    pub(super) start: u64,
    pub(super) end: u64,
    /// The failed call's error kind: the span's status.
    pub(super) error: Option<&'static str>,
    /// The sampler's attributes, after every other.
    pub(super) sampler: Vec<KeyValue>,
}

/// A sampled span being written: its attributes, then its events, into one
/// buffer; the guard's verdict, the sampler's attributes and the head are
/// added when it is closed.
#[derive(Debug)]
pub(super) struct Open {
    head: Head,
    limits: Limits,
    body: Vec<u8>,
    /// Where the attributes end and the events begin in `body`.
    attributes_end: Option<usize>,
    attributes: Kept,
    events: u32,
    events_dropped: u32,
}

thread_local! {
    /// Span buffers a thread is done with, for its next spans: a buffer of
    /// a few kilobytes is past the allocator's per-thread cache, and taking
    /// one from its shared bins costs more than writing the span.
    static BODIES: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// How many span buffers a thread keeps.
const BODIES_KEPT: usize = 16;

/// An empty buffer for a span: one this thread kept, or a new one.
fn take_body() -> Vec<u8> {
    BODIES
        .try_with(|b| b.borrow_mut().pop())
        .ok()
        .flatten()
        // A call's span with a few answers fits; a larger one grows once.
        .unwrap_or_else(|| Vec::with_capacity(2048))
}

/// Keeps `body` for this thread's next span, while there is room.
fn give_body(mut body: Vec<u8>) {
    body.clear();
    let _ = BODIES.try_with(move |b| {
        let mut b = b.borrow_mut();
        if b.len() < BODIES_KEPT {
            b.push(body);
        }
    });
}

impl Open {
    pub(super) fn new(head: Head, limits: Limits) -> Open {
        Open {
            head,
            limits,
            body: take_body(),
            attributes_end: None,
            attributes: Kept::new(limits.attributes),
            events: 0,
            events_dropped: 0,
        }
    }

    /// The span's attributes, written before any event.
    pub(super) fn attributes(&mut self) -> Proto<'_> {
        debug_assert!(self.attributes_end.is_none(), "attributes after events");
        Proto {
            out: &mut self.body,
            field: 9,
            kept: &mut self.attributes,
        }
    }

    /// One `gen_ai.evaluation.result` event at the span's end, its
    /// attributes written by `write`; past the limit on events it is
    /// dropped and counted.
    pub(super) fn event(&mut self, write: impl FnOnce(&mut Proto<'_>)) {
        let body = &mut self.body;
        self.attributes_end.get_or_insert(body.len());
        if self.events >= self.limits.events {
            self.events_dropped = self.events_dropped.saturating_add(1);
            return;
        }
        self.events += 1;
        let at = otlp::begin(body, 11);
        otlp::fixed64(body, 1, self.head.end);
        otlp::string(body, 2, EVALUATION_RESULT);
        let mut kept = Kept::new(self.limits.per_event);
        write(&mut Proto {
            out: body,
            field: 3,
            kept: &mut kept,
        });
        otlp::uint(body, 4, u64::from(kept.dropped));
        otlp::end(body, at);
    }

    /// Closes the span, the guard's verdict and the sampler's attributes
    /// after the call's: the whole `Span` message (without its own key and
    /// length), in the SDK's order of fields, is the pieces
    /// [`Closed::pieces`] gives, the few bytes not already in the span's
    /// buffer written into `small`.
    pub(super) fn close(self, guard: Option<&GuardVerdict>, small: &mut Vec<u8>) -> Closed {
        let Open {
            head,
            body,
            attributes_end,
            mut attributes,
            events_dropped,
            ..
        } = self;
        small.clear();
        otlp::bytes(small, 1, &head.trace_id);
        otlp::bytes(small, 2, &head.span_id);
        otlp::string(small, 3, &head.trace_state);
        if let Some(parent) = head.parent.filter(|p| *p != [0; 8]) {
            otlp::bytes(small, 4, &parent);
        }
        otlp::string(small, 5, &head.name);
        otlp::uint(small, 6, head.kind);
        otlp::fixed64(small, 7, head.start);
        otlp::fixed64(small, 8, head.end);
        let front = small.len();
        let mut more = Proto {
            out: small,
            field: 9,
            kept: &mut attributes,
        };
        if let Some(v) = guard {
            write_guard_attributes(v, &mut more);
        }
        for kv in &head.sampler {
            more.key_value(kv);
        }
        otlp::uint(small, 10, u64::from(attributes.dropped));
        let middle = small.len();
        otlp::uint(small, 12, u64::from(events_dropped));
        let status = otlp::begin(small, 15);
        if let Some(kind) = head.error {
            otlp::string(small, 2, kind);
            otlp::uint(small, 3, 2);
        }
        otlp::end(small, status);
        otlp::fixed32(
            small,
            16,
            otlp::span_flags(head.parent.is_some(), head.flags),
        );
        Closed {
            split: attributes_end.unwrap_or(body.len()),
            body,
            front,
            middle,
        }
    }
}

/// A closed span: the bytes the calls wrote (its attributes, then its
/// events, split where they meet) and where the few others lie in the
/// buffer [`Open::close`] wrote them into.
pub(super) struct Closed {
    body: Vec<u8>,
    split: usize,
    front: usize,
    middle: usize,
}

impl Closed {
    /// The `Span` message's pieces, in order, the others read from `small`:
    /// ids, name and times; the call's attributes; the guard's and the
    /// sampler's, and the count dropped; the events; the rest.
    pub(super) fn pieces<'a>(&'a self, small: &'a [u8]) -> [&'a [u8]; 5] {
        [
            &small[..self.front],
            &self.body[..self.split],
            &small[self.front..self.middle],
            &self.body[self.split..],
            &small[self.middle..],
        ]
    }

    /// Gives the span's buffer back for this thread's next span.
    pub(super) fn done(self) {
        give_body(self.body);
    }
}

/// The SDK's batch settings (`BatchConfig`), read from `OTEL_BSP_*` by its
/// rules: a value that is not a whole number is ignored, and a batch is
/// never larger than the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Batch {
    pub(super) max_queue: usize,
    pub(super) delay: Duration,
    pub(super) max_batch: usize,
    pub(super) timeout: Duration,
}

impl Batch {
    /// The settings from the process's environment.
    pub(super) fn from_env() -> Batch {
        Batch::from_vars(|name| std::env::var(name).ok())
    }

    /// The settings with the variables read by `var`.
    pub(super) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Batch {
        let number = |name: &str| var(name).and_then(|v| v.parse::<u64>().ok());
        let max_queue = var("OTEL_BSP_MAX_QUEUE_SIZE")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(2_048);
        let delay = number("OTEL_BSP_SCHEDULE_DELAY").unwrap_or(5_000);
        let max_batch = var("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(512);
        let timeout = number("OTEL_BSP_EXPORT_TIMEOUT").unwrap_or(30_000);
        Batch {
            max_queue,
            delay: Duration::from_millis(delay),
            max_batch: max_batch.min(max_queue),
            timeout: Duration::from_millis(timeout),
        }
    }
}

/// What wraps the spans of every request: the resource and the scope, each
/// written once, and what follows the spans (the schemas' fields).
#[derive(Debug, Clone)]
pub(super) struct Envelope {
    resource: Vec<u8>,
    scope: Vec<u8>,
    /// The scope's schema field, then the resource's (each empty for no
    /// schema): what follows the spans, inside `ScopeSpans` and
    /// `ResourceSpans` respectively.
    tail: Vec<u8>,
    /// Where the resource's schema field begins in `tail`.
    scope_tail: usize,
}

impl Envelope {
    pub(super) fn new(
        resource: &opentelemetry_sdk::Resource,
        scope: &InstrumentationScope,
    ) -> Envelope {
        let (resource, resource_schema) = otlp::resource_message(resource);
        let (scope, scope_schema) = otlp::scope_message(scope);
        let mut tail = Vec::new();
        otlp::string(&mut tail, 3, &scope_schema);
        let scope_tail = tail.len();
        otlp::string(&mut tail, 3, &resource_schema);
        Envelope {
            resource,
            scope,
            tail,
            scope_tail,
        }
    }

    /// The most bytes [`Envelope::head`] writes: two keys and lengths for
    /// each of `ResourceSpans` and `ScopeSpans`, and the resource and
    /// scope messages.
    pub(super) fn room(&self) -> usize {
        4 * (1 + 10) + self.resource.len() + self.scope.len()
    }

    /// What comes before `spans` bytes of spans (each a `ScopeSpans` field
    /// 2, key and length included) in an `ExportTraceServiceRequest` with
    /// one `ResourceSpans` holding one `ScopeSpans`, [`Envelope::tail`]
    /// after them: every length is known before it is written.
    pub(super) fn head(&self, spans: usize) -> Vec<u8> {
        let field = otlp::field_len;
        let scope_spans = field(self.scope.len()) + spans + self.scope_tail;
        let resource_spans =
            field(self.resource.len()) + field(scope_spans) + self.tail.len() - self.scope_tail;
        let mut out = Vec::with_capacity(self.room());
        let head = |out: &mut Vec<u8>, tag: u32, len: usize| {
            otlp::key(out, tag, LEN);
            otlp::varint(out, len as u64);
        };
        head(&mut out, 1, resource_spans);
        head(&mut out, 1, self.resource.len());
        out.extend_from_slice(&self.resource);
        head(&mut out, 2, scope_spans);
        head(&mut out, 1, self.scope.len());
        out.extend_from_slice(&self.scope);
        out
    }

    /// What comes after the spans: the scope's schema, then the
    /// resource's.
    pub(super) fn tail(&self) -> &[u8] {
        &self.tail
    }

    /// The whole `ExportTraceServiceRequest` of `spans`, in a buffer of its
    /// own.
    pub(super) fn request(&self, spans: &[u8]) -> Vec<u8> {
        let mut out = self.head(spans.len());
        out.reserve(spans.len() + self.tail.len());
        out.extend_from_slice(spans);
        out.extend_from_slice(&self.tail);
        out
    }
}

/// Posts one finished request; the error's text is not shown to anyone.
pub(super) type Post = Box<dyn FnMut(Bytes) -> Result<(), String> + Send>;

/// The bounded queue of encoded spans and the thread that posts them.
pub(super) struct Queue {
    shared: Arc<Shared>,
    /// The thread's last result, once it has sent everything at shutdown.
    done: Mutex<Option<mpsc::Receiver<OTelSdkResult>>>,
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    batch: Batch,
    dropped: AtomicU64,
    /// The bytes left before each batch's spans for its request's head
    /// ([`Envelope::room`]).
    room: usize,
}

/// The spans waiting, one after the other, and where each ends; before the
/// first span of each batch (of `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`), room for
/// the head of the request that will carry it, so that the request is
/// written around the spans where they lie.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    stop: bool,
}

impl Queue {
    /// Starts the thread that posts what is queued with `post`, telling
    /// `notice` of each batch.
    pub(super) fn start(
        batch: Batch,
        envelope: Envelope,
        post: Post,
        notice: Notice,
    ) -> std::io::Result<Queue> {
        let shared = Arc::new(Shared {
            pending: Mutex::default(),
            wake: Condvar::new(),
            batch,
            dropped: AtomicU64::new(0),
            room: envelope.room(),
        });
        let (tx, rx) = mpsc::channel();
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("toolnexus-otel-spans".into())
            .spawn(move || {
                let result = theirs.run(&envelope, post, &notice);
                let _ = tx.send(result);
            })?;
        Ok(Queue {
            shared,
            done: Mutex::new(Some(rx)),
        })
    }

    /// Queues one encoded `Span` message, the concatenation of `pieces`; a
    /// full queue drops it (counted) and never waits.
    pub(super) fn push(&self, pieces: &[&[u8]]) -> bool {
        let len: usize = pieces.iter().map(|p| p.len()).sum();
        let s = &self.shared;
        let mut p = s.lock();
        if p.stop || p.ends.len() >= s.batch.max_queue {
            drop(p);
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let max_batch = s.batch.max_batch.max(1);
        if p.ends.len().is_multiple_of(max_batch) {
            let at = p.bytes.len();
            p.bytes.resize(at + s.room, 0);
        }
        otlp::key(&mut p.bytes, 2, LEN);
        otlp::varint(&mut p.bytes, len as u64);
        for piece in pieces {
            p.bytes.extend_from_slice(piece);
        }
        let end = p.bytes.len();
        p.ends.push(end);
        let ready = p.ends.len() == max_batch;
        drop(p);
        if ready {
            s.wake.notify_one();
        }
        true
    }

    /// How many spans the full queue dropped.
    pub(super) fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Sends what is queued and stops the thread, waiting at most `timeout`.
    pub(super) fn shutdown(&self, timeout: Duration) -> OTelSdkResult {
        // A poisoned lock holds a receiver or nothing, whole either way.
        let Some(done) = self.done.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Err(OTelSdkError::AlreadyShutdown);
        };
        self.shared.stop();
        let dropped = self.dropped();
        if dropped > 0 {
            tracing::warn!(
                target: "toolnexus::otel",
                "otel: {dropped} span{} dropped: the queue was full (OTEL_BSP_MAX_QUEUE_SIZE)",
                if dropped == 1 { "" } else { "s" }
            );
        }
        match done.recv_timeout(timeout) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(OTelSdkError::Timeout(timeout)),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(OTelSdkError::InternalFailure(
                "the spans' thread ended".into(),
            )),
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // The thread sends what is left and ends; nobody waits for it.
        self.shared.stop();
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // A poisoned lock holds whole spans: a panic never stops mid-copy
        // of one (extending a vector does not unwind halfway).
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_all();
    }

    /// The thread: waits for a batch or the delay, takes what waits (the
    /// calls go on filling the other buffer), posts it in batches.
    fn run(&self, envelope: &Envelope, mut post: Post, notice: &Notice) -> OTelSdkResult {
        let (mut bytes, mut ends) = (Vec::new(), Vec::new());
        let mut held = Vec::new();
        let max_batch = self.batch.max_batch.max(1);
        let mut last = Instant::now();
        let mut result = Ok(());
        loop {
            let stop = {
                let mut p = self.lock();
                while !p.stop && p.ends.len() < max_batch {
                    let left = self.batch.delay.saturating_sub(last.elapsed());
                    if left.is_zero() {
                        break;
                    }
                    p = match self.wake.wait_timeout(p, left) {
                        Ok((p, _)) => p,
                        Err(poisoned) => poisoned.into_inner().0,
                    };
                }
                std::mem::swap(&mut p.bytes, &mut bytes);
                std::mem::swap(&mut p.ends, &mut ends);
                p.stop
            };
            last = Instant::now();
            let (sends, all) = requests(envelope, self.room, max_batch, bytes, &ends);
            for (request, spans) in sends {
                let sent = post(request);
                notice.settled(spans, sent.is_ok());
                result = sent.map_err(OTelSdkError::InternalFailure);
            }
            // The posts are done with the bytes: their memory takes the
            // next spans. A post's client may hold them a while after it
            // answered: they wait to be taken back, so that a batch's
            // buffer is not fresh memory to fault in page by page.
            let taken = all.len();
            held.push(all);
            bytes = take_back(&mut held).unwrap_or_else(|| Vec::with_capacity(taken));
            bytes.clear();
            ends.clear();
            if stop {
                return result;
            }
        }
    }
}

/// How many posted buffers the spans' thread waits for while a post's client
/// still holds them; past them the oldest is let go (freed by its holder).
const HELD_KEPT: usize = 4;

/// The first of the posted buffers `held` that nothing holds any more, to
/// fill again; the others wait, at most [`HELD_KEPT`] of them.
fn take_back(held: &mut Vec<Bytes>) -> Option<Vec<u8>> {
    let mut kept = Vec::with_capacity(held.len());
    let mut free = None;
    for b in held.drain(..) {
        match free {
            None => match b.try_into_mut() {
                Ok(b) => free = Some(Vec::from(b)),
                // No memory behind it (nothing was taken): nothing to wait for.
                Err(b) if b.is_empty() => {}
                Err(b) => kept.push(b),
            },
            Some(_) => kept.push(b),
        }
    }
    let past = kept.len().saturating_sub(HELD_KEPT);
    kept.drain(..past);
    *held = kept;
    free
}

/// One request: where it lies in the bytes taken, or a copy of its own.
enum Part {
    Lies(std::ops::Range<usize>),
    Copied(Vec<u8>),
}

/// The requests that carry the spans taken from the queue (`bytes`, each
/// batch's spans after [`Envelope::room`] bytes of room, `ends` where each
/// span ends), each with how many spans it carries. Each request is written
/// around its spans where they lie: its head into the room before them, and
/// the tail (the schemas, usually none) after them when nothing follows.
/// Returned beside them: all of `bytes`, which the requests are slices of.
fn requests(
    envelope: &Envelope,
    room: usize,
    max_batch: usize,
    mut bytes: Vec<u8>,
    ends: &[usize],
) -> (Vec<(Bytes, u64)>, Bytes) {
    let tail = envelope.tail();
    let last = ends.len().div_ceil(max_batch);
    // Each request, in order.
    let mut parts: Vec<(Part, u64)> = Vec::new();
    let mut from = 0;
    for (i, chunk) in ends.chunks(max_batch).enumerate() {
        let Some(&to) = chunk.last() else { continue };
        let spans = from + room..to;
        let n = chunk.len() as u64;
        if tail.is_empty() || i + 1 == last {
            let head = envelope.head(spans.len());
            let start = spans.start - head.len();
            bytes[start..spans.start].copy_from_slice(&head);
            parts.push((Part::Lies(start..to + tail.len()), n));
        } else {
            // Another batch follows: the tail would overwrite its room.
            parts.push((Part::Copied(envelope.request(&bytes[spans])), n));
        }
        from = to;
    }
    if !ends.is_empty() {
        bytes.extend_from_slice(tail);
    }
    let all = Bytes::from(bytes);
    let out = parts
        .into_iter()
        .map(|(part, n)| match part {
            Part::Lies(range) => (all.slice(range), n),
            Part::Copied(copy) => (Bytes::from(copy), n),
        })
        .collect();
    (out, all)
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
