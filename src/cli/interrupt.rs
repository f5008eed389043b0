//! What an interruption keeps. A command says, as it goes, what Ctrl-C (SIGINT) or a kill
//! (SIGTERM, as a batch system's time limit sends) would leave behind; on either, igemu
//! prints that note, then exits 130 (143 for SIGTERM) as the shell would have.

use std::sync::Mutex;

/// Tells what an interruption now would keep.
type Note = Box<dyn Fn() -> String + Send>;

/// The current note; `None` before a command says anything (then nothing is written yet).
static NOTE: Mutex<Option<Note>> = Mutex::new(None);

/// Sets what an interruption from now on would keep (`note` is asked when it comes, so it
/// may count what is done by then).
pub(super) fn keeps(note: impl Fn() -> String + Send + 'static) {
    if let Ok(mut slot) = NOTE.lock() {
        *slot = Some(Box::new(note));
    }
}

/// The message an interruption prints: the command's note, or that nothing was written.
fn message(signal: &str) -> String {
    let note = NOTE
        .lock()
        .ok()
        .and_then(|slot| slot.as_ref().map(|note| note()));
    format!(
        "igemu: interrupted ({signal}): {}",
        note.unwrap_or_else(|| "nothing was written".into())
    )
}

/// Prints the note and ends the process with the shell's code for the signal.
fn leave(signal: &str, code: i32) -> ! {
    use std::io::{IsTerminal, Write};
    let mut err = std::io::stderr();
    // A progress bar may hold the line: start a fresh one.
    let fresh = if err.is_terminal() { "\n" } else { "" };
    let _ = writeln!(err, "{fresh}{}", message(signal));
    std::process::exit(code)
}

/// Watches for Ctrl-C and SIGTERM on a thread of its own for the rest of the process.
/// Without it (the thread or the signal handler cannot be set up) the signals end the
/// process as before, without a word.
pub(super) fn install() {
    let _ = std::thread::Builder::new()
        .name("igemu-signals".into())
        .spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
            else {
                return;
            };
            rt.block_on(wait());
        });
}

#[cfg(unix)]
async fn wait() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    tokio::select! {
        _ = int.recv() => leave("Ctrl-C", 130),
        _ = term.recv() => leave("SIGTERM", 143),
    }
}

#[cfg(not(unix))]
async fn wait() {
    if tokio::signal::ctrl_c().await.is_ok() {
        leave("Ctrl-C", 130);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_is_asked_when_the_interruption_comes() {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = done.clone();
        keeps(move || {
            format!(
                "{} runs kept",
                counted.load(std::sync::atomic::Ordering::SeqCst)
            )
        });
        done.store(7, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            message("Ctrl-C"),
            "igemu: interrupted (Ctrl-C): 7 runs kept"
        );
    }
}
