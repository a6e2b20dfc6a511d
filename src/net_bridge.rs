//! `tackle __net-bridge SOCKET -- PROGRAM ARGS…`: runs inside the sandbox of a command that has
//! a network grant. The sandbox has no network; the bridge listens on 127.0.0.1:3128 in the
//! sandbox's own network namespace (where `HTTP_PROXY`/`HTTPS_PROXY` point), hands each
//! connection to the host's filtering proxy through the Unix socket, runs the command, and
//! exits with its status (which ends the sandbox and everything in it).

use std::ffi::OsString;
use std::process::ExitCode;

/// The port the proxy variables name (the host's `proxy::BRIDGE_PORT`).
const PORT: u16 = 3128;

pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut args = args.into_iter();
    let (Some(socket), Some(dashes)) = (args.next(), args.next()) else {
        eprintln!("usage: tackle __net-bridge SOCKET -- PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    let Some(program) = args.next().filter(|_| dashes == "--") else {
        eprintln!("usage: tackle __net-bridge SOCKET -- PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    let rest: Vec<OsString> = args.collect();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tackle network bridge: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(bridge(socket, program, rest))
}

async fn bridge(socket: OsString, program: OsString, args: Vec<OsString>) -> ExitCode {
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", PORT)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("tackle network bridge: cannot listen on 127.0.0.1:{PORT}: {e}");
            return ExitCode::from(1);
        }
    };
    let mut child = match tokio::process::Command::new(&program).args(&args).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "tackle network bridge: cannot start {}: {e}",
                program.to_string_lossy()
            );
            return ExitCode::from(127);
        }
    };
    loop {
        tokio::select! {
            status = child.wait() => return exit_code(status),
            accepted = listener.accept() => {
                if let Ok((mut tcp, _)) = accepted {
                    let socket = socket.clone();
                    tokio::spawn(async move {
                        if let Ok(mut unix) = tokio::net::UnixStream::connect(&socket).await {
                            let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                        }
                    });
                }
            }
        }
    }
}

fn exit_code(status: std::io::Result<std::process::ExitStatus>) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => {
            let code = s
                .code()
                .or_else(|| s.signal().map(|sig| 128 + sig))
                .unwrap_or(1);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(_) => ExitCode::from(1),
    }
}
