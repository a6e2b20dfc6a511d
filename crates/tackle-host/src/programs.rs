//! The files that *are* a program on this machine, so that the sandbox can take them away.
//!
//! A program is found by name in every program directory (the command's `PATH` and the
//! standard ones) and then by identity wherever else on those directories it sits: hard links
//! (same inode), symlinks (their targets), byte-identical copies, and multi-call binaries
//! (busybox, toybox, a single-binary coreutils) that carry it as an applet. The listing of the
//! directories is read once per process; everything after it is computed from the listing.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Where programs are looked for by name besides the command's `PATH`.
pub(crate) const STANDARD_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
    "/usr/games",
    "/usr/local/games",
    "/snap/bin",
    "/opt/homebrew/bin",
];

/// Bash's loadable builtins: `enable -f /usr/lib/bash/rm rm` gives bash an `rm` of its own,
/// so a file of a denied program's name there is that program too.
const LOADABLE_BUILTIN_DIRS: &[&str] = &[
    "/usr/lib/bash",
    "/usr/local/lib/bash",
    "/usr/lib/x86_64-linux-gnu/bash",
    "/usr/lib/aarch64-linux-gnu/bash",
];

/// Helper directories programs run their parts from (git's exec-path): searched by identity
/// and name, not shown as program directories.
const HELPER_DIRS: &[&str] = &[
    "/usr/lib/git-core",
    "/usr/libexec/git-core",
    "/usr/local/libexec/git-core",
    "/usr/libexec",
];

/// File names of binaries that are many programs at once, chosen by `argv[0]` or their first
/// argument.
const MULTI_CALL: &[&str] = &["busybox", "toybox", "coreutils", "uutils"];

/// Biggest multi-call binary read whole to look for an applet's name.
const MULTI_CALL_MAX_BYTES: u64 = 64 << 20;

/// One entry of a program directory.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub dir: PathBuf,
    pub name: OsString,
    /// The file it resolves to (symlinks followed), when it resolves to a regular file.
    pub real: PathBuf,
    pub id: (u64, u64),
    pub size: u64,
}

impl Entry {
    fn named(&self, program: &str) -> bool {
        self.name
            .to_str()
            .is_some_and(|n| n.eq_ignore_ascii_case(program))
    }
}

/// Every program directory of the command and what is in each.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Directories searched by name, canonical, in `PATH` order first.
    pub program_dirs: Vec<PathBuf>,
    pub entries: Vec<Entry>,
    /// Distinguishes listings for the caches built on them.
    id: u64,
    /// Each directory read and its modification time then: a program added, removed or
    /// renamed there since makes the listing stale.
    read: Vec<(PathBuf, Option<std::time::SystemTime>)>,
}

impl Listing {
    pub fn new(program_dirs: Vec<PathBuf>, entries: Vec<Entry>) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Self {
            program_dirs,
            entries,
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            read: Vec::new(),
        }
    }

    /// Whether every directory read still has the modification time it had (a few `stat`s).
    fn is_current(&self) -> bool {
        self.read.iter().all(|(dir, then)| modified(dir) == *then)
    }
}

fn modified(dir: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(dir).and_then(|m| m.modified()).ok()
}

/// The listing for these `PATH` directories, read once per process and set of directories and
/// read again when one of its directories changed (a long-running process sees a program
/// installed after it started).
pub(crate) fn listing(path_dirs: &[PathBuf]) -> Arc<Listing> {
    static CACHE: OnceLock<Mutex<BTreeMap<Vec<PathBuf>, Arc<Listing>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache
        .lock()
        .ok()
        .and_then(|c| c.get(path_dirs).map(Arc::clone))
        .filter(|l| l.is_current())
    {
        return hit;
    }
    let fresh = Arc::new(read_listing(path_dirs));
    if let Ok(mut c) = cache.lock() {
        c.insert(path_dirs.to_vec(), Arc::clone(&fresh));
    }
    fresh
}

/// The `PATH` a command gets (Tackle's own, which the scrubbed environment passes on).
pub(crate) fn command_path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default()
}

fn read_listing(path_dirs: &[PathBuf]) -> Listing {
    let mut program_dirs: Vec<PathBuf> = Vec::new();
    let named = path_dirs
        .iter()
        .cloned()
        .chain(STANDARD_DIRS.iter().map(PathBuf::from));
    for dir in named {
        if !dir.is_absolute() {
            continue;
        }
        if let Ok(canon) = std::fs::canonicalize(&dir) {
            if canon.is_dir() && !program_dirs.contains(&canon) {
                program_dirs.push(canon);
            }
        }
    }
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut entries = Vec::new();
    let mut read = Vec::new();
    let extra = LOADABLE_BUILTIN_DIRS
        .iter()
        .chain(HELPER_DIRS)
        .map(PathBuf::from)
        .chain(nested_bin_dirs());
    for dir in program_dirs.iter().cloned().chain(extra) {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let then = modified(&dir);
        let Ok(listed) = std::fs::read_dir(&dir) else {
            continue;
        };
        read.push((dir.clone(), then));
        for e in listed.flatten() {
            let path = e.path();
            // Follows symlinks: the entry is what running it would run.
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let is_link = e.file_type().is_ok_and(|t| t.is_symlink());
            let real = if is_link {
                match std::fs::canonicalize(&path) {
                    Ok(r) => r,
                    Err(_) => continue,
                }
            } else {
                path
            };
            entries.push(Entry {
                dir: dir.clone(),
                name: e.file_name(),
                real,
                id: (meta.dev(), meta.ino()),
                size: meta.len(),
            });
        }
    }
    Listing {
        read,
        ..Listing::new(program_dirs, entries)
    }
}

/// Trees whose `bin` and `sbin` directories hold programs that are not on `PATH` but can be
/// run by their path: another interpreter's build under a toolchain manager, a JDK, a
/// database's own programs.
fn nested_bin_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = [
        "/opt",
        "/usr/local",
        "/usr/lib",
        "/usr/libexec",
        "/nix/store",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        // Where toolchain managers keep whole installations; not `~/.cargo` or `~/.local`,
        // whose `bin` is on PATH and whose other trees are sources and libraries by the
        // thousand (every crate's `src/bin`).
        for sub in [
            ".pyenv/versions",
            ".rustup/toolchains",
            ".nvm/versions",
            ".volta/tools",
            ".bun",
            ".deno",
            "go",
        ] {
            roots.push(home.join(sub));
        }
    }
    roots.extend(std::env::var_os("RUSTUP_HOME").map(|r| PathBuf::from(r).join("toolchains")));
    roots
}

/// Every `bin` or `sbin` directory a few levels below [`nested_bin_roots`] (links not
/// followed; a bounded number of directories visited, so a huge tree cannot stall a call).
fn nested_bin_dirs() -> Vec<PathBuf> {
    // Two levels find `/opt/X/bin`, `/usr/lib/jvm/X/bin`, `~/.pyenv/versions/X/bin`; deeper
    // ones cost a directory read each for every first command of a process.
    const MAX_DEPTH: usize = 2;
    const MAX_VISITED: usize = 2_000;
    let mut found = Vec::new();
    let mut visited = 0;
    let mut stack: Vec<(PathBuf, usize)> = nested_bin_roots().into_iter().map(|r| (r, 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        visited += 1;
        if visited > MAX_VISITED {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = e.file_name();
            if name == "bin" || name == "sbin" {
                found.push(e.path());
            } else if depth < MAX_DEPTH {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    found
}

/// How a file was found to be a denied program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    /// Its name is the program's (or a symlink of that name leads to it).
    Name,
    /// A hard link of a file found by name.
    HardLink,
    /// The same bytes as a file found by name.
    Copy,
    /// A multi-call binary that carries the program as an applet.
    MultiCall,
}

/// A file to take away, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct MaskedProgram {
    /// The denied program (as the grant's deny list names it).
    pub program: String,
    /// The file taken away (replaced by an empty, non-executable one in the sandbox).
    pub path: PathBuf,
    /// How the file was found to be that program.
    pub found: Found,
}

/// [`find_denied`], remembered per listing and list of programs: reading multi-call binaries
/// and comparing copies happens once per process, not once per command.
pub(crate) fn denied_files(listing: &Listing, denied: &[String]) -> Vec<MaskedProgram> {
    type Key = (u64, Vec<String>);
    static CACHE: OnceLock<Mutex<BTreeMap<Key, Vec<MaskedProgram>>>> = OnceLock::new();
    if denied.is_empty() {
        return Vec::new();
    }
    let key = (listing.id, denied.to_vec());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    let found = find_denied(listing, denied);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, found.clone());
    }
    found
}

/// Every file of the listing that is one of `denied`, by real path (each once).
fn find_denied(listing: &Listing, denied: &[String]) -> Vec<MaskedProgram> {
    let mut out: BTreeMap<PathBuf, MaskedProgram> = BTreeMap::new();
    let mut add = |program: &str, path: &Path, found: Found| {
        out.entry(path.to_path_buf())
            .or_insert_with(|| MaskedProgram {
                program: program.to_string(),
                path: path.to_path_buf(),
                found,
            });
    };
    for program in denied {
        let by_name: Vec<&Entry> = listing
            .entries
            .iter()
            .filter(|e| e.named(program))
            .collect();
        let ids: BTreeSet<(u64, u64)> = by_name.iter().map(|e| e.id).collect();
        for e in &by_name {
            add(program, &e.real, Found::Name);
        }
        let originals: Vec<&Path> = by_name.iter().map(|e| e.real.as_path()).collect();
        for e in &listing.entries {
            if ids.contains(&e.id) {
                add(program, &e.real, Found::HardLink);
            } else if by_name.iter().any(|o| o.size == e.size)
                && originals.iter().any(|o| same_bytes(o, &e.real))
            {
                add(program, &e.real, Found::Copy);
            } else if is_multi_call(&e.real) && carries_applet(&e.real, program) {
                add(program, &e.real, Found::MultiCall);
            }
        }
    }
    out.into_values().collect()
}

fn is_multi_call(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| MULTI_CALL.iter().any(|m| n.starts_with(m)))
}

/// Whether a multi-call binary names `program` among its applets (their names are stored as
/// NUL-terminated strings). A binary that cannot be read counts as carrying it.
fn carries_applet(path: &Path, program: &str) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return true;
    };
    if meta.len() > MULTI_CALL_MAX_BYTES {
        return true;
    }
    let Ok(bytes) = std::fs::read(path) else {
        return true;
    };
    let needle: Vec<u8> = [&[0u8][..], program.as_bytes(), &[0u8][..]].concat();
    bytes.windows(needle.len()).any(|w| w == needle.as_slice())
}

/// Whether two files hold the same bytes (compared in blocks; an unreadable one never does).
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    if a == b {
        return true;
    }
    let (Ok(mut fa), Ok(mut fb)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let mut ba = vec![0u8; 64 * 1024];
    let mut bb = vec![0u8; 64 * 1024];
    loop {
        let (Ok(na), Ok(nb)) = (read_full(&mut fa, &mut ba), read_full(&mut fb, &mut bb)) else {
            return false;
        };
        if na != nb || ba.get(..na) != bb.get(..nb) {
            return false;
        }
        if na == 0 {
            return true;
        }
    }

    fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            let Some(rest) = buf.get_mut(n..) else { break };
            match f.read(rest)? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    }
}

/// The files an allow list leaves in the program directories: (directory, name, real file).
/// The shell that runs the line (`bash`, and `sh`, which has no more power) always stays.
pub(crate) fn allowed_entries(
    listing: &Listing,
    allowed: &[String],
) -> Vec<(PathBuf, OsString, PathBuf)> {
    let keep = |name: &str| name == "bash" || name == "sh" || allowed.iter().any(|a| a == name);
    // A multi-call binary picks its program from `argv[0]`, which the line controls
    // (`exec -a rm ls victim`): allowing one of its names would allow all of them, so it is
    // shown only under its own name (`busybox` allowed by name).
    let multi_call = |e: &Entry| {
        is_multi_call(&e.real)
            || listing
                .entries
                .iter()
                .any(|o| o.id == e.id && is_multi_call(&o.real))
    };
    listing
        .entries
        .iter()
        .filter(|e| e.name.to_str().is_some_and(keep))
        .filter(|e| listing.program_dirs.contains(&e.dir))
        .filter(|e| !multi_call(e) || is_multi_call(&e.dir.join(&e.name)))
        .map(|e| (e.dir.clone(), e.name.clone(), e.real.clone()))
        .collect()
}

/// Directories an allowed program runs its own parts from (git's exec-path), found beside
/// its real file: `<prefix>/lib/git-core` or `<prefix>/libexec/git-core`.
pub(crate) fn helper_dirs(program: &str, real: &Path) -> Vec<PathBuf> {
    let Some(prefix) = real.parent().and_then(Path::parent) else {
        return Vec::new();
    };
    let subdirs: &[&str] = match program {
        "git" => &["lib/git-core", "libexec/git-core"],
        _ => &[],
    };
    subdirs
        .iter()
        .map(|s| prefix.join(s))
        .filter(|d| d.is_dir())
        .collect()
}

/// Whether a file starts as an ELF object does.
pub(crate) fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// The dynamic loaders a program may name, in the order they are tried for `--list`.
pub(crate) const LOADERS: &[&str] = &[
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1",
    "/lib/ld-linux-armhf.so.3",
    "/lib/ld-linux.so.2",
    "/lib/ld-musl-x86_64.so.1",
    "/lib/ld-musl-aarch64.so.1",
];

/// The shared libraries `program` links, as real paths, with the loader that loads them; none
/// for a static program or a script. The loader itself resolves them (`--list`, what `ldd`
/// runs), so the answer is the one it gives when the program starts. Cached per process.
pub(crate) fn libraries(program: &Path) -> Vec<PathBuf> {
    let cache = library_cache();
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(program).cloned()) {
        return hit;
    }
    let found = if is_elf(program) {
        list_libraries(program)
    } else {
        Vec::new()
    };
    if let Ok(mut c) = cache.lock() {
        c.insert(program.to_path_buf(), found.clone());
    }
    found
}

type LibraryCache = Mutex<BTreeMap<PathBuf, Vec<PathBuf>>>;

fn library_cache() -> &'static LibraryCache {
    static CACHE: OnceLock<LibraryCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Asks the loader about every program not asked about yet, all at once (one short-lived
/// process each), so that a first allow-list command waits for the slowest, not for the sum.
pub(crate) fn prefetch_libraries(programs: &[PathBuf]) {
    let cache = library_cache();
    let missing: Vec<&PathBuf> = {
        let Ok(known) = cache.lock() else { return };
        let mut m: Vec<&PathBuf> = programs
            .iter()
            .filter(|p| !known.contains_key(*p))
            .collect();
        m.sort();
        m.dedup();
        m
    };
    if missing.len() < 2 {
        return;
    }
    let found: Vec<(PathBuf, Vec<PathBuf>)> = std::thread::scope(|s| {
        let running: Vec<_> = missing
            .iter()
            .map(|p| {
                s.spawn(move || {
                    let libs = if is_elf(p) {
                        list_libraries(p)
                    } else {
                        Vec::new()
                    };
                    ((*p).clone(), libs)
                })
            })
            .collect();
        running.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    if let Ok(mut c) = cache.lock() {
        c.extend(found);
    }
}

fn list_libraries(program: &Path) -> Vec<PathBuf> {
    for loader in LOADERS.iter().map(Path::new).filter(|l| l.exists()) {
        let out = std::process::Command::new(loader)
            .arg("--list")
            .arg(program)
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output();
        let Ok(out) = out else { continue };
        if !out.status.success() {
            continue;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut libs: Vec<PathBuf> = text
            .lines()
            .filter_map(|line| {
                let line = line.trim();
                let path = match line.split_once("=> ") {
                    Some((_, rest)) => rest,
                    None => line,
                };
                let path = path.split(" (").next().unwrap_or(path).trim();
                path.starts_with('/').then(|| PathBuf::from(path))
            })
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
        if let Ok(l) = std::fs::canonicalize(loader) {
            libs.push(l);
        }
        libs.sort();
        libs.dedup();
        return libs;
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn exe(path: &Path, body: &[u8]) {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_program_is_found_by_name_link_copy_and_applet() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        let other = d.path().join("other");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        exe(&bin.join("rm"), b"\x7fELF remove files");
        std::fs::hard_link(bin.join("rm"), other.join("unlinker")).unwrap();
        exe(&other.join("copy-of-it"), b"\x7fELF remove files");
        exe(&other.join("busybox"), b"\x7fELF\0ls\0rm\0sh\0");
        exe(&other.join("toybox"), b"\x7fELF\0ls\0cat\0");
        exe(&other.join("same-size"), b"\x7fELF remove filez");
        symlink(other.join("busybox"), bin.join("del")).unwrap();
        let listing = read_listing(&[bin.clone(), other.clone()]);
        let got = find_denied(&listing, &["rm".to_string()]);
        let canon = |p: PathBuf| std::fs::canonicalize(p).unwrap();
        let paths: Vec<(PathBuf, Found)> = got.iter().map(|m| (m.path.clone(), m.found)).collect();
        assert!(
            paths.contains(&(canon(bin.join("rm")), Found::Name)),
            "{paths:?}"
        );
        assert!(
            paths.contains(&(canon(other.join("unlinker")), Found::HardLink)),
            "{paths:?}"
        );
        assert!(
            paths.contains(&(canon(other.join("copy-of-it")), Found::Copy)),
            "{paths:?}"
        );
        assert!(
            paths.contains(&(canon(other.join("busybox")), Found::MultiCall)),
            "{paths:?}"
        );
        assert!(
            !paths
                .iter()
                .any(|(p, _)| p.ends_with("toybox") || p.ends_with("same-size")),
            "{paths:?}"
        );
    }

    #[test]
    fn a_program_added_later_makes_the_listing_stale() {
        let d = tempfile::tempdir().unwrap();
        let dirs = [d.path().to_path_buf()];
        let first = listing(&dirs);
        assert!(
            Arc::ptr_eq(&first, &listing(&dirs)),
            "unchanged: the same listing"
        );
        // Directory times have a granularity; wait past it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        exe(&d.path().join("rm"), b"x");
        let second = listing(&dirs);
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(second.entries.iter().any(|e| e.name == "rm"));
    }

    #[test]
    fn names_match_without_case_and_the_shell_always_stays_under_an_allow_list() {
        let d = tempfile::tempdir().unwrap();
        exe(&d.path().join("RM"), b"x");
        exe(&d.path().join("bash"), b"y");
        exe(&d.path().join("python3"), b"z");
        exe(&d.path().join("git"), b"g");
        let listing = read_listing(&[d.path().to_path_buf()]);
        let inside =
            |m: &MaskedProgram| m.path.starts_with(std::fs::canonicalize(d.path()).unwrap());
        let denied = find_denied(&listing, &["rm".to_string()]);
        assert_eq!(denied.iter().filter(|m| inside(m)).count(), 1, "{denied:?}");
        let kept: Vec<String> = allowed_entries(&listing, &["git".to_string()])
            .into_iter()
            .map(|(_, n, _)| n.to_string_lossy().into_owned())
            .collect();
        assert!(kept.contains(&"git".to_string()) && kept.contains(&"bash".to_string()));
        assert!(!kept.contains(&"python3".to_string()), "{kept:?}");
    }

    #[test]
    fn an_allowed_name_of_a_multi_call_binary_is_not_shown_since_argv0_picks_the_program() {
        let d = tempfile::tempdir().unwrap();
        exe(&d.path().join("busybox"), b"\x7fELF\0ls\0rm\0");
        symlink(d.path().join("busybox"), d.path().join("ls")).unwrap();
        std::fs::hard_link(d.path().join("busybox"), d.path().join("cat")).unwrap();
        let listing = read_listing(&[d.path().to_path_buf()]);
        let dir = std::fs::canonicalize(d.path()).unwrap();
        let kept = |allowed: &[&str]| -> Vec<String> {
            let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
            allowed_entries(&listing, &allowed)
                .into_iter()
                .filter(|(d, _, _)| *d == dir)
                .map(|(_, n, _)| n.to_string_lossy().into_owned())
                .collect()
        };
        assert!(
            kept(&["ls", "cat"]).is_empty(),
            "{:?}",
            kept(&["ls", "cat"])
        );
        assert_eq!(kept(&["busybox"]), ["busybox"]);
    }
}
