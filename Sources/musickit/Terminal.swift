import PlatformSupport
import AudioEngine
import Foundation
import Glibc
import MusicKitCore
import MusicKitTerminal
import Synchronization

/// Exit codes of every command; listed in `musickit --help`.
enum ExitCode: Int32 {
    case success = 0
    /// Something failed at run time (see the message).
    case failure = 1
    /// The command line was wrong; usage was printed.
    case usage = 2
    /// Partly done: some entries could not be played, or some items were not found.
    case someEntriesFailed = 3
    /// Nothing in the request could be played.
    case nothingPlayable = 4
    /// The audio device could not be opened or failed.
    case deviceError = 5
    /// Stopped by Ctrl-C (SIGINT) or SIGTERM.
    case interrupted = 130

    static let helpText = """
      0    success
      1    failure (the message says what)
      2    wrong arguments (usage is printed)
      3    partly done: some entries could not be played or some items were not found
      4    nothing could be played
      5    the audio device could not be opened or failed
      130  interrupted (Ctrl-C)
    """
}

/// Writes to stdout and stderr without buffering surprises. Everything written is made safe
/// for a terminal first (`terminalSafe`): titles, artists, tags, paths and messages come from
/// outside, and a tag holding `ESC ] 0; … BEL` or `ESC [2J` must not retitle or clear the
/// person's terminal. The tool's own line redraws go through `replaceLine`.
enum Console {
    static func out(_ text: String) { write(1, terminalSafe(text, keepingLines: true)) }
    static func error(_ text: String) { write(2, terminalSafe(text, keepingLines: true)) }

    /// Redraws the current line of stdout (or stderr) with `text`: the one escape sequence
    /// the tool itself writes (carriage return, erase line), then `text` made safe.
    static func replaceLine(_ text: String, toStandardError: Bool = false) {
        write(toStandardError ? 2 : 1, "\r\u{1B}[2K" + terminalSafe(text, keepingLines: false))
    }

    private static func write(_ descriptor: Int32, _ text: String) {
        var remaining = Array(text.utf8)
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            remaining.removeFirst(written)
        }
    }

    static var isInteractive: Bool { isatty(0) == 1 && isatty(1) == 1 }
}

/// Puts the terminal in raw mode (keys arrive one by one, unechoed) and restores it.
final class RawTerminal: @unchecked Sendable {
    // @unchecked: `original` is written once in init and read once in restore.
    private var original = termios()
    private var active = false

    init?() {
        guard isatty(0) == 1, tcgetattr(0, &original) == 0 else { return nil }
        var raw = rawKeyMode(of: original)
        guard tcsetattr(0, TCSANOW, &raw) == 0 else { return nil }
        active = true
    }

    func restore() {
        guard active else { return }
        active = false
        tcsetattr(0, TCSANOW, &original)
    }

    deinit { restore() }
}

/// A key or key sequence read from a raw terminal.
enum Key: Equatable {
    case character(Character)
    case left, right, up, down
    case other
}

/// Reads keys from stdin on a thread of its own and hands them to `handler`.
final class KeyReader: Sendable {
    init(handler: @escaping @Sendable (Key) -> Void) {
        PlatformThread.detached(name: "musickit.keys") {
            var byte: UInt8 = 0
            var escape: [UInt8] = []
            while read(0, &byte, 1) == 1 {
                if !escape.isEmpty || byte == 0x1B {
                    escape.append(byte)
                    if escape.count == 3 {
                        switch escape[2] {
                        case 0x41: handler(.up)
                        case 0x42: handler(.down)
                        case 0x43: handler(.right)
                        case 0x44: handler(.left)
                        default: handler(.other)
                        }
                        escape.removeAll()
                    } else if escape.count == 2 && byte != 0x5B {
                        escape.removeAll()
                    }
                    continue
                }
                handler(.character(Character(UnicodeScalar(byte))))
            }
        }
    }
}

/// Turns SIGINT/SIGTERM/SIGUSR1/SIGUSR2 into callbacks on a queue.
final class SignalHandlers: @unchecked Sendable {
    // @unchecked: sources are created once and only cancelled.
    private var sources: [DispatchSourceSignal] = []
    private let queue = DispatchQueue(label: "musickit.signals")

    /// The signals that came after `noteUntilHandled` and before `on` handled them, a bit each.
    private static let noted = Atomic<UInt64>(0)

    /// Until `on` handles them, `signalNumbers` are noted instead of doing what they do by
    /// default, and `on` runs its handler for one that came meanwhile: `musickit play` sets its
    /// sources up only after its first sound (the first starts libdispatch's event thread), and
    /// SIGUSR1 ("next") sent while it starts ended it. A plain handler that sets a bit: no
    /// thread, one system call per signal. Not for SIGINT and SIGTERM, which end a program that
    /// has not started yet, as they end any.
    static func noteUntilHandled(_ signalNumbers: [Int32]) {
        _ = noted.load(ordering: .relaxed)  // made here, not first in the handler
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signalNumber in
            SignalHandlers.noted.bitwiseOr(1 << UInt64(signalNumber), ordering: .relaxed)
        }
        sigemptyset(&action.sa_mask)
        for signalNumber in signalNumbers { sigaction(signalNumber, &action, nil) }
    }

    func on(_ signalNumber: Int32, _ handler: @escaping @Sendable () -> Void) {
        signal(signalNumber, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
        source.setEventHandler(handler: handler)
        source.resume()
        sources.append(source)
        let bit: UInt64 = 1 << UInt64(signalNumber)
        if Self.noted.bitwiseAnd(~bit, ordering: .relaxed).oldValue & bit != 0 { queue.async(execute: handler) }
    }
}

