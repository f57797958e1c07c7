//! The terminal the explorer draws on: its modes, job control and the input thread.
//!
//! - **Modes.** Raw mode, the alternate screen, mouse reports and bracketed paste are
//!   entered together ([`enter`]) and left together ([`restore`]) on every path: a normal
//!   exit, an error, a panic on the UI thread, a terminating signal, and a suspend.
//! - **Job control.** In raw mode Ctrl-Z is a key, not SIGTSTP; both lead to [`suspend`]:
//!   the modes are left, the process group is stopped as the shell's Ctrl-Z would stop it
//!   (SIGTSTP with its default action, so a group with no shell to continue it, an
//!   orphaned one, is not stopped: the kernel discards the signal), and once continued
//!   (`fg`, SIGCONT) the modes are entered again for a full redraw. A stop the explorer did
//!   not make itself (`kill -STOP`) is followed by SIGCONT, which leads to [`resume`].
//! - **Input.** [`spawn_input`] forwards every event crossterm has read as soon as it
//!   has it. crossterm 0.29 waits for the terminal with an edge-triggered epoll and stops
//!   reading at the first complete event, so bytes left behind after a burst (the end of a
//!   paste, the last of 6,000 keys) would wait for the next key press
//!   (crossterm-rs/crossterm#1057): before blocking, the input thread checks whether the
//!   terminal still holds unread bytes and, if so, re-arms the wait by setting the
//!   terminal's modes to what they are ([`nudge`]; Linux wakes a terminal's readers on
//!   every mode change).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event, KeyEventKind, MouseEventKind,
};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, is_raw_mode_enabled, EnterAlternateScreen,
    LeaveAlternateScreen,
};

use super::msg::Msg;

/// Set while [`suspend`] stops and continues the process: the SIGCONT that continues it
/// needs no [`resume`] of its own.
static SUSPENDING: AtomicBool = AtomicBool::new(false);

/// Whether [`suspend`] is under way (the signal thread drops the SIGCONT it causes).
pub fn suspending() -> bool {
    SUSPENDING.load(Ordering::SeqCst)
}

/// Held while the terminal's modes change, so that [`nudge`] (input thread) never
/// writes back modes that the UI thread has just left.
static MODES: Mutex<()> = Mutex::new(());

fn modes() -> MutexGuard<'static, ()> {
    MODES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Raw mode, the alternate screen, mouse reports (clicks, wheel: the keyboard stays
/// first, the mouse is a shortcut) and bracketed paste. On an error what was entered is
/// left again.
pub fn enter() -> io::Result<()> {
    let entered = {
        let _m = modes();
        enable_raw_mode().and_then(|()| {
            execute!(
                io::stdout(),
                EnterAlternateScreen,
                EnableMouseCapture,
                EnableBracketedPaste
            )
        })
    };
    if entered.is_err() {
        restore();
    }
    entered
}

/// Leave every mode [`enter`] set and show the cursor (errors ignored: the terminal may
/// be gone).
pub fn restore() {
    let _m = modes();
    let _ = disable_raw_mode();
    let _ = execute!(
        io::stdout(),
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = io::stdout().flush();
}

/// Ctrl-Z / SIGTSTP: restore the terminal, stop the process group, and once continued
/// enter the modes again ([`resume`]). Call it from the main thread (the one a signal
/// sent to the process is delivered to first). The caller redraws the whole screen.
pub fn suspend() -> io::Result<()> {
    SUSPENDING.store(true, Ordering::SeqCst);
    restore();
    stop_process_group();
    let r = resume();
    SUSPENDING.store(false, Ordering::SeqCst);
    r
}

/// After a stop: whatever the shell did to the terminal meanwhile (it sets its own modes
/// when a job stops), set raw mode up again from the modes it has now, and the rest.
pub fn resume() -> io::Result<()> {
    {
        // crossterm remembers raw mode as on after a stop it did not see; leaving it puts
        // the modes it saved back, so that entering it starts afresh.
        let _m = modes();
        let _ = disable_raw_mode();
    }
    enter()
}

/// Stop the process group as the terminal's Ctrl-Z would: SIGTSTP with its default
/// action (the explorer's own handler is set aside meanwhile, so that the signal stops
/// the process instead of coming back as a message), sent to the group so that a
/// wrapper (`sh -c`, an editor's `git commit`) stops too and the shell gets the terminal
/// back. Returns once the process is continued, or at once if the kernel discarded the
/// stop (an orphaned group: no job-control shell would ever continue it).
fn stop_process_group() {
    // SAFETY: plain libc calls on zero-initialised C structs; the previous action is put
    // back exactly as it was (signal-hook's handler).
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGTSTP, &dfl, &mut old) != 0 {
            tracing::warn!("cannot suspend: {}", io::Error::last_os_error());
            return;
        }
        if libc::kill(0, libc::SIGTSTP) != 0 {
            tracing::warn!("cannot suspend: {}", io::Error::last_os_error());
        }
        // A signal sent to the process is taken by the calling (main) thread on its way
        // back from kill, so it has stopped and been continued by now; wait while it is
        // still pending all the same (another thread takes it), never for long.
        for _ in 0..200 {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            if libc::sigpending(&mut set) != 0 || libc::sigismember(&set, libc::SIGTSTP) != 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        libc::sigaction(libc::SIGTSTP, &old, std::ptr::null_mut());
    }
    tracing::info!("continued after a suspend");
}

/// Bytes the terminal (stdin: the explorer runs only on one) holds that nobody has read.
fn unread_input() -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let r = unsafe { libc::ioctl(libc::STDIN_FILENO, libc::FIONREAD, &mut n) };
    if r == 0 {
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    }
}

/// Set the terminal's modes to what they are: Linux wakes the terminal's readers on every
/// mode change, which re-arms crossterm's edge-triggered wait (see the module doc). Only
/// while raw mode is on: never while the UI thread is leaving it.
fn nudge() {
    let _m = modes();
    if !is_raw_mode_enabled().unwrap_or(false) {
        return;
    }
    // SAFETY: tcgetattr fills the struct that tcsetattr then reads.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0 {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t);
        }
    }
}

/// The next terminal event: at once if crossterm has one ready; if not while the terminal
/// still holds unread bytes, after a [`nudge`]; else whenever one comes.
fn next_event() -> io::Result<Event> {
    if !event::poll(Duration::ZERO)? && unread_input() > 0 {
        nudge();
        // Ready at once after a nudge; if the nudge did nothing (another kernel), the
        // blocking read below is what crossterm alone would do.
        event::poll(Duration::from_millis(20))?;
    }
    event::read()
}

/// What the app takes of a terminal event (key presses, clicks and wheel turns, resizes,
/// pastes; not releases, moves or drags).
fn message(e: Event) -> Option<Msg> {
    Some(match e {
        Event::Key(k) if k.kind != KeyEventKind::Release => Msg::Key(k),
        Event::Resize(width, height) => Msg::Resize { width, height },
        Event::Mouse(m)
            if matches!(
                m.kind,
                MouseEventKind::Down(_) | MouseEventKind::ScrollUp | MouseEventKind::ScrollDown
            ) =>
        {
            Msg::Mouse(m)
        }
        Event::Paste(text) => Msg::Paste(text),
        _ => return None,
    })
}

/// Start the input thread: every terminal event the app takes goes to `tx` as soon as it
/// is read (the UI thread drains the channel before each frame). A read error (the
/// terminal is gone) sends [`Msg::Terminate`] and ends the thread.
pub fn spawn_input(tx: Sender<Msg>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("codescope-input".into())
        .spawn(move || loop {
            let m = match next_event() {
                Ok(e) => match message(e) {
                    Some(m) => m,
                    None => continue,
                },
                Err(e) => {
                    tracing::error!("terminal input: {e}");
                    let _ = tx.send(Msg::Terminate);
                    break;
                }
            };
            if tx.send(m).is_err() {
                break;
            }
        })
        .map(drop)
}
