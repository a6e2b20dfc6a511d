//! The searching half of `search`. The walk opens each file by descriptor (links refused) and
//! hands it over; a thread per core searches the files. The hits come back in walk order, cut
//! at the cap, exactly as one thread searching the files in turn would have returned them.

use grep_regex::RegexMatcher;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use tackle_protocol::text::truncate_at_char_boundary;
use tackle_protocol::SearchHit;

use crate::fd_walk::Flow;

/// Longest line returned in a search hit; minified files would otherwise flood the result.
const MAX_HIT_LINE_BYTES: usize = 1_000;

/// Searchers at most, whatever the core count.
const MAX_SEARCHERS: usize = 8;

/// Files opened ahead of the searchers: bounds the descriptors held at once.
const QUEUE: usize = 64;

/// One file the walk opened, with its path relative to the search root and its walk position.
struct Opened {
    index: usize,
    rel: PathBuf,
    file: File,
}

/// Run `walk`, which calls its argument with each file to search and stops when told to;
/// returns the first `cap` hits in walk order, and what the walk returned.
pub(crate) fn search_walked<E>(
    matcher: &RegexMatcher,
    cap: usize,
    walk: impl FnOnce(&mut dyn FnMut(PathBuf, File) -> Flow) -> Result<(), E>,
) -> Result<Vec<SearchHit>, E> {
    let searchers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_SEARCHERS);
    let found = AtomicUsize::new(0);
    let per_file: Mutex<Vec<(usize, Vec<SearchHit>)>> = Mutex::new(Vec::new());
    let (tx, rx) = sync_channel::<Opened>(QUEUE);
    let rx = Mutex::new(rx);
    let walked = std::thread::scope(|s| {
        let mut started = 0;
        for _ in 0..searchers {
            let spawned = std::thread::Builder::new()
                .name("tackle-search".into())
                .spawn_scoped(s, || search_queue(&rx, matcher, cap, &found, &per_file));
            started += usize::from(spawned.is_ok());
        }
        if started == 0 {
            // No thread to be had: the walk's own thread searches each file as it comes.
            drop(tx);
            let (mut searcher, mut index) = (new_searcher(), 0);
            return walk(&mut |rel, file| {
                let opened = Opened { index, rel, file };
                index += 1;
                search_and_keep(&mut searcher, matcher, cap, &found, &per_file, &opened);
                match found.load(Ordering::Acquire) >= cap {
                    true => Flow::Stop,
                    false => Flow::Continue,
                }
            });
        }
        feed(tx, cap, &found, walk)
    });
    walked?;
    let mut per_file = per_file.into_inner().unwrap_or_else(|p| p.into_inner());
    per_file.sort_unstable_by_key(|(index, _)| *index);
    Ok(per_file
        .into_iter()
        .flat_map(|(_, hits)| hits)
        .take(cap)
        .collect())
}

/// The walk's side: numbers the files and queues them until the cap is reached. Dropping
/// `tx` at the end tells the searchers that no more files come.
fn feed<E>(
    tx: SyncSender<Opened>,
    cap: usize,
    found: &AtomicUsize,
    walk: impl FnOnce(&mut dyn FnMut(PathBuf, File) -> Flow) -> Result<(), E>,
) -> Result<(), E> {
    let mut index = 0;
    walk(&mut |rel, file| {
        if found.load(Ordering::Acquire) >= cap {
            return Flow::Stop;
        }
        if tx.send(Opened { index, rel, file }).is_err() {
            return Flow::Stop;
        }
        index += 1;
        Flow::Continue
    })
}

/// A searcher's side. Files leave the queue in walk order, and a file taken once the cap is
/// reached is skipped. So the files searched are always a prefix of the walk, holding at least
/// `cap` hits whenever the cap was reached.
fn search_queue(
    rx: &Mutex<Receiver<Opened>>,
    matcher: &RegexMatcher,
    cap: usize,
    found: &AtomicUsize,
    per_file: &Mutex<Vec<(usize, Vec<SearchHit>)>>,
) {
    let mut searcher = new_searcher();
    loop {
        // Taking a file and deciding whether it is still needed happen under one lock, so
        // the decisions are made in walk order too. A searcher that decided after taking would
        // skip a file that another searcher's later file had already made look unneeded.
        let (opened, needed) = match rx.lock() {
            Ok(rx) => match rx.recv() {
                Ok(opened) => (opened, found.load(Ordering::Acquire) < cap),
                Err(_) => return,
            },
            Err(_) => return,
        };
        if !needed {
            continue;
        }
        search_and_keep(&mut searcher, matcher, cap, found, per_file, &opened);
    }
}

fn new_searcher() -> Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build()
}

/// Search one file and keep its hits under its walk position.
fn search_and_keep(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    cap: usize,
    found: &AtomicUsize,
    per_file: &Mutex<Vec<(usize, Vec<SearchHit>)>>,
    opened: &Opened,
) {
    let hits = search_file(searcher, matcher, cap, opened);
    if hits.is_empty() {
        return;
    }
    found.fetch_add(hits.len(), Ordering::AcqRel);
    if let Ok(mut all) = per_file.lock() {
        all.push((opened.index, hits));
    }
}

/// Up to `cap` hits in one file.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    cap: usize,
    opened: &Opened,
) -> Vec<SearchHit> {
    // Only regular files: the walk refused links, and this refuses a FIFO or a device.
    if !opened.file.metadata().is_ok_and(|m| m.is_file()) {
        return Vec::new();
    }
    let mut hits = Vec::new();
    let sink = Lossy(|line_number, line: &str| {
        let line = line.trim_end_matches(['\n', '\r']);
        hits.push(SearchHit {
            path: opened.rel.clone(),
            line_number,
            line: truncate_at_char_boundary(line, MAX_HIT_LINE_BYTES).to_string(),
        });
        Ok(hits.len() < cap)
    });
    // An unreadable file is skipped like ripgrep does; it is not the caller's error.
    let _ = searcher.search_file(matcher, &opened.file, sink);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_regex::RegexMatcherBuilder;

    /// 300 files. File `i` has `i % 4` matching lines, between lines that do not match.
    fn tree() -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let mut names = Vec::new();
        for i in 0..300 {
            let mut text = String::new();
            for j in 0..(i % 4) {
                text.push_str(&format!("noise\nneedle {i}-{j}\n"));
            }
            let name = PathBuf::from(format!("f{i:03}.txt"));
            std::fs::write(dir.path().join(&name), text).unwrap();
            names.push(name);
        }
        (dir, names)
    }

    fn run(dir: &std::path::Path, names: &[PathBuf], cap: usize) -> (Vec<String>, usize) {
        let matcher = RegexMatcherBuilder::new().build("needle").unwrap();
        let mut fed = 0;
        let hits = search_walked::<()>(&matcher, cap, |search| {
            for name in names {
                fed += 1;
                let file = File::open(dir.join(name)).unwrap();
                if search(name.clone(), file) == Flow::Stop {
                    break;
                }
            }
            Ok(())
        })
        .unwrap();
        let lines = hits.into_iter().map(|h| h.line).collect();
        (lines, fed)
    }

    /// What one thread would find, in order: file by file, line by line.
    fn expected(cap: usize) -> Vec<String> {
        (0..300)
            .flat_map(|i| (0..(i % 4)).map(move |j| format!("needle {i}-{j}")))
            .take(cap)
            .collect()
    }

    #[test]
    fn hits_come_back_in_walk_order_cut_at_the_cap() {
        let (dir, names) = tree();
        for cap in [1, 2, 7, 37, 100, 449, 450, 10_000] {
            let (got, _) = run(dir.path(), &names, cap);
            assert_eq!(got, expected(cap), "cap {cap}");
        }
        // Small caps race the searchers against each other most: a file skipped out of turn
        // shows as a missing or a later hit. Repeated to give the race its chances.
        for round in 0..30 {
            for cap in [1, 2, 3, 5] {
                let (got, _) = run(dir.path(), &names, cap);
                assert_eq!(got, expected(cap), "cap {cap}, round {round}");
            }
        }
    }

    #[test]
    fn the_walk_stops_soon_after_the_cap_is_reached() {
        let (dir, names) = tree();
        let (got, fed) = run(dir.path(), &names, 3);
        assert_eq!(got, expected(3));
        // Three hits are in the first three files. The walk runs at most the queue ahead of
        // the searchers.
        assert!(fed < 300, "the walk fed all {fed} files for a cap of 3");
    }
}
