//! A program that runs only if it has the SHA-256 its caller names, and then runs exactly the
//! bytes that were checked.
//!
//! Checking the file and then executing its path leaves a window in which the file can be
//! replaced or rewritten. Instead the file is read once, the digest is taken of what was read,
//! and those bytes are copied into a sealed memory file (no write, grow or shrink, ever again)
//! that the child executes through `/proc/self/fd/N`. Whatever happens to the file on disk
//! after the check, the child runs what was checked.

use sha2::{Digest, Sha256};
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use tackle_protocol::plugins::MAX_PROGRAM_BYTES;
use tackle_protocol::HostError;

/// The verified copy; the child inherits the descriptor and executes [`PinnedProgram::path`].
pub(crate) struct PinnedProgram {
    fd: OwnedFd,
}

impl PinnedProgram {
    /// Read `path` once and keep it only if its SHA-256 is `want_hex`.
    pub(crate) fn load(path: &Path, want_hex: &str) -> Result<Self, HostError> {
        let file = std::fs::File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => HostError::NotFound {
                path: path.to_path_buf(),
            },
            _ => HostError::Io(format!("{}: {e}", path.display())),
        })?;
        let mut bytes = Vec::new();
        file.take(MAX_PROGRAM_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| HostError::Io(format!("{}: {e}", path.display())))?;
        if bytes.len() as u64 > MAX_PROGRAM_BYTES {
            return Err(HostError::Invalid(format!(
                "{} is larger than {MAX_PROGRAM_BYTES} bytes; it was not started",
                path.display()
            )));
        }
        let got = hex(&Sha256::digest(&bytes));
        if !got.eq_ignore_ascii_case(want_hex) {
            // A failure of the tool (its program is not the one trusted), as before the host
            // took over the check.
            return Err(HostError::Io(format!(
                "{} has SHA-256 {got}, not the {} its manifest names; it was not started",
                path.display(),
                want_hex.to_ascii_lowercase()
            )));
        }
        let fd = sealed_copy(&bytes).map_err(|e| {
            HostError::Io(format!(
                "could not hold a verified copy of {}: {e}; it was not started",
                path.display()
            ))
        })?;
        Ok(Self { fd })
    }

    pub(crate) fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// What the child executes: its own inherited copy of the descriptor.
    pub(crate) fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `bytes` in a memory file that can no longer change. Close-on-exec in Tackle; the exec path
/// clears the flag for the one child that runs it.
fn sealed_copy(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    let name = CString::new("tackle-plugin").map_err(std::io::Error::other)?;
    // SAFETY: a valid NUL-terminated name; the result is checked before use.
    let raw = unsafe {
        libc::memfd_create(
            name.as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING | MFD_EXEC,
        )
    };
    // Kernels before 6.3 do not know MFD_EXEC (their memory files are executable anyway).
    let raw = if raw < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // SAFETY: as above.
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) }
    } else {
        raw
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: plain fcntl on a descriptor this function owns.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(OwnedFd::from(file))
}

/// `MFD_EXEC` (Linux 6.3): ask for an executable memory file where the default is not.
const MFD_EXEC: libc::c_uint = 0x0010;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, body: &str) -> PathBuf {
        let p = dir.join("prog");
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_different_digest_is_refused_naming_both() {
        let d = tempfile::tempdir().unwrap();
        let p = script(d.path(), "#!/bin/sh\necho hi\n");
        let e = PinnedProgram::load(&p, &"0".repeat(64))
            .err()
            .expect("refused");
        let text = e.to_string();
        assert!(text.contains("not started"), "{text}");
        assert!(
            text.contains(&hex(&Sha256::digest(b"#!/bin/sh\necho hi\n"))),
            "{text}"
        );
    }

    #[test]
    fn the_checked_bytes_run_even_after_the_file_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let good = "#!/bin/sh\necho checked\n";
        let p = script(d.path(), good);
        let pinned =
            PinnedProgram::load(&p, &hex(&Sha256::digest(good.as_bytes()))).expect("pinned");
        // Both ways of swapping the program after the check: rewrite in place, and rename a
        // different file over it.
        std::fs::write(&p, "#!/bin/sh\necho swapped\n").unwrap();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let other = script(&sub, "#!/bin/sh\necho renamed\n");
        std::fs::rename(&other, &p).unwrap();
        let fd = pinned.raw_fd();
        let mut cmd = std::process::Command::new(pinned.path());
        // SAFETY: fcntl only, between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().expect("runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "checked\n");
    }

    #[test]
    fn the_copy_cannot_be_written() {
        let d = tempfile::tempdir().unwrap();
        let p = script(d.path(), "#!/bin/sh\n");
        let pinned = PinnedProgram::load(&p, &hex(&Sha256::digest(b"#!/bin/sh\n"))).unwrap();
        let opened = std::fs::OpenOptions::new().write(true).open(pinned.path());
        let written = opened.and_then(|mut f| f.write_all(b"echo more\n"));
        assert!(written.is_err(), "a sealed copy took a write");
    }
}
