//! The rooms an arrow joins, and the circles between rooms: the layers'
//! rule 1.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::Module;

/// The rooms an arrow joins: their nearest common module, and the child of it
/// on each side. `None` when one end is the other's ancestor.
pub(super) fn rooms(from: &str, to: &str) -> Option<(Module, Module, Module)> {
    let f: Vec<&str> = from.split("::").filter(|s| !s.is_empty()).collect();
    let t: Vec<&str> = to.split("::").filter(|s| !s.is_empty()).collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    if common == f.len() || common == t.len() {
        return None;
    }
    Some((
        f[..common].join("::"),
        f[..=common].join("::"),
        t[..=common].join("::"),
    ))
}

/// The strongly connected groups of more than one module (Tarjan's
/// algorithm), each sorted, in a stable order.
pub(super) fn circles<T>(edges: &BTreeMap<(Module, Module), T>) -> Vec<Vec<Module>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (f, t) in edges.keys() {
        next.entry(f).or_default().push(t);
        next.entry(t).or_default();
    }
    struct State<'a> {
        next: &'a BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for &w in &s.next[v] {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                group.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        next: &next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in next.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// A closed walk through every room of a circle: from the first room to the
/// nearest room not yet passed, and so on, then back to the first; each leg
/// is a shortest path inside the circle.
pub(super) fn walk<T>(
    circle: &[Module],
    edges: &BTreeMap<(Module, Module), T>,
) -> Vec<(Module, Module)> {
    let inside: BTreeSet<&str> = circle.iter().map(String::as_str).collect();
    let start = circle[0].as_str();
    let mut passed = BTreeSet::from([start]);
    let mut at = start;
    let mut out = Vec::new();
    loop {
        // Breadth first from `at`, so the first room reached is the nearest.
        let mut came: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([at]);
        let mut goal = None;
        while let Some(v) = queue.pop_front() {
            if v != at && (!passed.contains(v) || passed.len() == inside.len() && v == start) {
                goal = Some(v);
                break;
            }
            for (f, t) in edges.keys() {
                if f == v && inside.contains(t.as_str()) && !came.contains_key(t.as_str()) {
                    came.insert(t, v);
                    queue.push_back(t);
                }
            }
        }
        let Some(goal) = goal else {
            return out;
        };
        let mut leg = Vec::new();
        let mut v = goal;
        while v != at || leg.is_empty() {
            let before = came[v];
            leg.push((before.to_string(), v.to_string()));
            passed.insert(v);
            v = before;
            if v == at {
                break;
            }
        }
        leg.reverse();
        out.extend(leg);
        if goal == start {
            return out;
        }
        at = goal;
    }
}
