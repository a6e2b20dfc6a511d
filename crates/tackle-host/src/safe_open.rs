//! Opening a canonical path so that no symlink can be swapped in between the grant check and
//! the open (a concurrent command could replace a checked directory with a link out).
//!
//! On Linux 5.6+ `openat2(RESOLVE_NO_SYMLINKS)` refuses a link in *any* component; elsewhere
//! (or where a seccomp filter hides it) the fallback walks from `/` one component at a time
//! with `openat(O_NOFOLLOW)`, which refuses links just the same. Files in a directory are
//! then created and renamed relative to the directory's descriptor, so the directory cannot
//! move under the write.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// `struct open_how` from `linux/openat2.h` (libc's is `non_exhaustive`).
#[cfg(target_os = "linux")]
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Open `path` (absolute, canonical) refusing symlinks on the way.
pub(crate) fn open_no_links(path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "only absolute paths without `..` are opened",
        ));
    }
    let c = cstr(path.as_os_str().as_bytes())?;
    let flags = flags | libc::O_CLOEXEC;
    #[cfg(target_os = "linux")]
    {
        const RESOLVE_NO_SYMLINKS: u64 = 0x04;
        let how = OpenHow {
            flags: flags as u64,
            mode: 0,
            resolve: RESOLVE_NO_SYMLINKS,
        };
        // SAFETY: `c` is a valid C string and `how` a valid open_how of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                libc::AT_FDCWD,
                c.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel returned a fresh descriptor that nothing else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) });
        }
        let err = io::Error::last_os_error();
        if !matches!(err.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) {
            return Err(err);
        }
    }
    open_walk(path, flags)
}

/// The fallback: from `/`, open each directory with `O_NOFOLLOW | O_DIRECTORY` relative to
/// the previous one, so a link in any component fails (`ELOOP` / `ENOTDIR`) as under openat2.
pub(crate) fn open_walk(path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let names: Vec<&OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let dir_flags = libc::O_DIRECTORY | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut dir = open_at(libc::AT_FDCWD, OsStr::new("/"), dir_flags)?;
    let Some((last, parents)) = names.split_last() else {
        return open_at(libc::AT_FDCWD, OsStr::new("/"), flags | libc::O_NOFOLLOW);
    };
    for name in parents {
        dir = open_at(dir.as_raw_fd(), name, dir_flags)?;
    }
    open_at(
        dir.as_raw_fd(),
        last,
        flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
    )
}

/// `openat` without creating anything.
fn open_at(dirfd: libc::c_int, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = cstr(name.as_bytes())?;
    // SAFETY: `c` is a valid C string; `dirfd` is AT_FDCWD or a descriptor we hold.
    let fd = unsafe { libc::openat(dirfd, c.as_ptr(), flags & !libc::O_CREAT) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What a directory entry is, without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    Link,
    Other,
}

/// The kind `getdents` reported for an entry, or `None` for `DT_UNKNOWN`.
fn listed_kind(d_type: u8) -> Option<Kind> {
    match d_type {
        libc::DT_UNKNOWN => None,
        libc::DT_DIR => Some(Kind::Dir),
        libc::DT_REG => Some(Kind::File),
        libc::DT_LNK => Some(Kind::Link),
        _ => Some(Kind::Other),
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    pub kind: Kind,
    pub size: u64,
}

/// A directory held open so that files are created and renamed inside *it*.
pub(crate) struct Dir {
    fd: OwnedFd,
}

impl Dir {
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(Self {
            fd: open_no_links(path, libc::O_DIRECTORY | libc::O_RDONLY)?,
        })
    }

    /// Create the directory `name` here (an existing one is fine) and open it, refusing a
    /// link put in its place.
    pub fn mkdir_open(&self, name: &OsStr) -> io::Result<Dir> {
        let c = cstr(name.as_bytes())?;
        // SAFETY: valid fd and C string.
        if unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) } != 0 {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::AlreadyExists {
                return Err(err);
            }
        }
        let flags = libc::O_DIRECTORY | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        Ok(Dir {
            fd: open_at(self.fd.as_raw_fd(), name, flags)?,
        })
    }

    /// Create `name` exclusively (never following a link) with `mode`.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let c = cstr(name.as_bytes())?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid fd and C string; the mode is passed as the variadic argument.
        let fd =
            unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, mode as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Open the directory `name` here, refusing a link in its place: a directory swapped
    /// for a link between the listing and the open is not entered.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let flags = libc::O_DIRECTORY | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        Ok(Dir {
            fd: open_at(self.fd.as_raw_fd(), name, flags)?,
        })
    }

    /// `fstatat(AT_SYMLINK_NOFOLLOW)`: what `name` here is, a link reported as a link.
    pub fn stat(&self, name: &OsStr) -> io::Result<Stat> {
        let c = cstr(name.as_bytes())?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: valid fd and C string; `st` is written by the kernel on success.
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                st.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fstatat succeeded, so the struct is initialised.
        let st = unsafe { st.assume_init() };
        let kind = match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFREG => Kind::File,
            libc::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        };
        Ok(Stat {
            kind,
            size: u64::try_from(st.st_size).unwrap_or(0),
        })
    }

    /// The names in this directory (without `.` and `..`), sorted, read from the held
    /// descriptor rather than from a path that could be swapped meanwhile, each with the kind
    /// the listing reported (`None` where the file system does not say). The kind is only a
    /// hint of what the name was when listed: every open re-checks with `O_NOFOLLOW`.
    pub fn names(&self) -> io::Result<Vec<(std::ffi::OsString, Option<Kind>)>> {
        // SAFETY: dup of a descriptor we hold; fdopendir takes ownership of the copy.
        let copy = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if copy < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `copy` is a fresh directory descriptor.
        let stream = unsafe { libc::fdopendir(copy) };
        if stream.is_null() {
            let err = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so `copy` is still ours to close.
            unsafe { libc::close(copy) };
            return Err(err);
        }
        // The stream starts where the descriptor's offset is; a held directory may have
        // been read before.
        // SAFETY: a valid stream.
        unsafe { libc::rewinddir(stream) };
        let mut names = Vec::new();
        loop {
            // SAFETY: a valid stream; the entry is copied out before the next call.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                break;
            }
            // SAFETY: readdir returned a valid dirent whose d_name is NUL-terminated.
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
            let bytes = name.to_bytes();
            if bytes != b"." && bytes != b".." {
                // SAFETY: the same valid dirent.
                let kind = listed_kind(unsafe { (*entry).d_type });
                names.push((OsStr::from_bytes(bytes).to_os_string(), kind));
            }
        }
        // SAFETY: a valid stream, closed once (this also closes `copy`).
        unsafe { libc::closedir(stream) };
        names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(names)
    }

    /// Open the file `name` here for reading, refusing a link in its place.
    pub fn open_file(&self, name: &OsStr) -> io::Result<File> {
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        Ok(File::from(open_at(self.fd.as_raw_fd(), name, flags)?))
    }

    /// Move `from` to `to` only if `to` does not exist (`EEXIST` otherwise), so a file
    /// created meanwhile is never replaced. Where the kernel or file system lacks
    /// `RENAME_NOREPLACE`, a hard link does the same (and fails the same way).
    pub fn rename_noreplace(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
        let fd = self.fd.as_raw_fd();
        #[cfg(target_os = "linux")]
        {
            // SAFETY: valid fd and C strings.
            let rc =
                unsafe { libc::renameat2(fd, f.as_ptr(), fd, t.as_ptr(), libc::RENAME_NOREPLACE) };
            if rc == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if !matches!(err.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
                return Err(err);
            }
        }
        // SAFETY: valid fd and C strings.
        if unsafe { libc::linkat(fd, f.as_ptr(), fd, t.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        self.remove(from)
    }

    /// Atomically replace `to` with `from`, both names in this directory.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid fd and C strings.
        if unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        let c = cstr(name.as_bytes())?;
        // SAFETY: valid fd and C string.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Make the rename durable.
    pub fn sync(&self) -> io::Result<()> {
        // SAFETY: valid fd.
        if unsafe { libc::fsync(self.fd.as_raw_fd()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_in_any_component_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("d")).unwrap();
        std::fs::write(real.join("d/f"), "x").unwrap();
        std::os::unix::fs::symlink(real.join("d"), real.join("link")).unwrap();
        assert!(open_no_links(&real.join("d/f"), libc::O_RDONLY).is_ok());
        let err = open_no_links(&real.join("link/f"), libc::O_RDONLY);
        if cfg!(target_os = "linux") {
            // Holds where openat2 exists (Linux 5.6+); the fallback guards the last
            // component only.
            assert_eq!(err.unwrap_err().raw_os_error(), Some(libc::ELOOP));
        }
        let last = open_no_links(&real.join("link"), libc::O_RDONLY | libc::O_DIRECTORY);
        assert!(last.is_err());
    }

    #[test]
    fn the_fallback_walk_refuses_a_link_in_any_component_too() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(real.join("d/e")).unwrap();
        std::fs::write(real.join("d/e/f"), "x").unwrap();
        std::os::unix::fs::symlink(real.join("d"), real.join("link")).unwrap();
        std::os::unix::fs::symlink(real.join("d/e/f"), real.join("d/flink")).unwrap();
        assert!(open_walk(&real.join("d/e/f"), libc::O_RDONLY).is_ok());
        for bad in ["link/e/f", "d/flink", "link"] {
            let err = open_walk(&real.join(bad), libc::O_RDONLY).unwrap_err();
            assert!(
                matches!(err.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn relative_paths_and_dot_dot_are_never_opened() {
        assert!(open_no_links(Path::new("etc/passwd"), libc::O_RDONLY).is_err());
        assert!(open_no_links(Path::new("/tmp/../etc/passwd"), libc::O_RDONLY).is_err());
    }

    #[test]
    fn mkdir_open_refuses_a_link_in_place_of_the_new_directory() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let out = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(out.path(), real.join("sub")).unwrap();
        let d = Dir::open(&real).unwrap();
        assert!(d.mkdir_open(OsStr::new("fresh")).is_ok());
        assert!(d.mkdir_open(OsStr::new("fresh")).is_ok());
        assert!(d.mkdir_open(OsStr::new("sub")).is_err());
    }
}
