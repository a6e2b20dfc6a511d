//! Opening a canonical path so that no symlink can be swapped in between the grant check and
//! the open (a concurrent command could replace a checked directory with a link out).
//!
//! On Linux 5.6+ `openat2(RESOLVE_NO_SYMLINKS)` refuses a link in *any* component; elsewhere
//! (or where a seccomp filter hides it) the fallback is `O_NOFOLLOW`, which covers only the
//! last component. Files in a directory are then created and renamed relative to the
//! directory's descriptor, so the directory cannot move under the write.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

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
    // SAFETY: as above; O_NOFOLLOW guards the last component only.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_NOFOLLOW) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
}
