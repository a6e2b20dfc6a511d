//! A directory inside the workspace and a link to outside are exchanged atomically
//! (`renameat2(RENAME_EXCHANGE)`) as fast as a thread can, while reads, listings and searches
//! go through the host. Not one name or byte from outside may come back.

mod common;

use common::Fixture;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tackle_protocol::{Grants, ListRequest, ReadRequest, SearchRequest};

const MARK: &str = "OUTSIDE-SECRET-7f3a";

fn exchange(a: &CString, b: &CString) -> bool {
    // SAFETY: valid C strings; AT_FDCWD relative paths.
    unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        ) == 0
    }
}

/// A thread exchanging two paths as fast as it can until stopped.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl Swapper {
    fn start(a: CString, b: CString) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if exchange(&a, &b) {
                        swaps.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        Self {
            stop,
            swaps,
            thread,
        }
    }

    /// Stops the thread and says how many exchanges succeeded.
    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        self.swaps.load(Ordering::Relaxed)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exchanging_a_directory_and_an_outside_link_leaks_nothing() {
    let f = Fixture::new();
    // Inside: d/ with files named like the outside ones, so a leak would be a content leak.
    f.write("d/notes.txt", "inside notes\n");
    f.write("d/sub/deep.txt", "inside deep\n");
    let out = f.outside();
    std::fs::create_dir_all(out.join("sub")).unwrap();
    std::fs::write(out.join("notes.txt"), format!("{MARK}\n")).unwrap();
    std::fs::write(out.join("sub/deep.txt"), format!("{MARK}\n")).unwrap();
    std::fs::write(out.join(format!("{MARK}.txt")), format!("{MARK}\n")).unwrap();
    std::os::unix::fs::symlink(&out, f.ws().join("s")).unwrap();

    let a = CString::new(f.ws().join("d").as_os_str().as_bytes()).unwrap();
    let b = CString::new(f.ws().join("s").as_os_str().as_bytes()).unwrap();
    let swapper = Swapper::start(a, b);

    let host = f.host(Grants::default());
    let (mut calls, mut leaks) = (0u64, Vec::new());
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        for path in ["d/notes.txt", "d/sub/deep.txt", "s/notes.txt"] {
            if let Ok(c) = host.read(ReadRequest::whole(path)).await {
                if String::from_utf8_lossy(&c.bytes).contains(MARK) {
                    leaks.push(format!("read {path}"));
                }
            }
        }
        for root in ["d", ".", "s"] {
            let req = ListRequest {
                path: root.into(),
                max_depth: None,
                include_hidden: true,
                respect_gitignore: false,
                glob: None,
                max_entries: 1000,
            };
            if let Ok(entries) = host.list(req).await {
                for e in entries {
                    if e.path.to_string_lossy().contains(MARK) {
                        leaks.push(format!("list {root}: {}", e.path.display()));
                    }
                }
            }
            let req = SearchRequest {
                root: root.into(),
                pattern: MARK.into(),
                case_insensitive: false,
                glob: None,
                include_hidden: true,
                max_results: 100,
            };
            if let Ok(hits) = host.search(req).await {
                for h in hits {
                    leaks.push(format!("search {root}: {} {}", h.path.display(), h.line));
                }
            }
        }
        calls += 9;
    }
    let swaps = swapper.stop();
    assert!(swaps > 100, "the race barely ran ({swaps} swaps)");
    assert!(
        leaks.is_empty(),
        "{} leaks in {calls} calls: {:?}",
        leaks.len(),
        &leaks[..leaks.len().min(10)]
    );
}

/// The walk routes entries by the kind the directory listing reported, without an `fstatat`
/// per entry. A file exchanged for a link to an outside file after the listing must still not
/// be searched: the open refuses the link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exchanging_a_file_and_an_outside_link_during_a_search_leaks_nothing() {
    let f = Fixture::new();
    f.write("notes.txt", "inside notes\n");
    let out = f.outside();
    std::fs::write(out.join("secret.txt"), format!("{MARK}\n")).unwrap();
    std::os::unix::fs::symlink(out.join("secret.txt"), f.ws().join("link.txt")).unwrap();

    let a = CString::new(f.ws().join("notes.txt").as_os_str().as_bytes()).unwrap();
    let b = CString::new(f.ws().join("link.txt").as_os_str().as_bytes()).unwrap();
    let swapper = Swapper::start(a, b);

    let host = f.host(Grants::default());
    let (mut searches, mut found_inside, mut leaks) = (0u64, 0u64, Vec::new());
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        for pattern in [MARK, "inside notes"] {
            let req = SearchRequest {
                root: ".".into(),
                pattern: pattern.into(),
                case_insensitive: false,
                glob: None,
                include_hidden: true,
                max_results: 100,
            };
            if let Ok(hits) = host.search(req).await {
                for h in hits {
                    if h.line.contains(MARK) {
                        leaks.push(format!("{} {}", h.path.display(), h.line));
                    } else {
                        found_inside += 1;
                    }
                }
            }
            searches += 1;
        }
    }
    let swaps = swapper.stop();
    assert!(swaps > 100, "the race barely ran ({swaps} swaps)");
    // The inside file is found under one name or the other between swaps: the search ran.
    assert!(
        found_inside > 0,
        "no search found the inside file in {searches} searches"
    );
    assert!(
        leaks.is_empty(),
        "{} leaks in {searches} searches: {:?}",
        leaks.len(),
        &leaks[..leaks.len().min(10)]
    );
}
