import Foundation
import Glibc
import MusicKitCore

/// A full-screen view on a terminal: the alternate screen with the cursor hidden and, when
/// `input` is a terminal, keys read one by one unechoed; everything put back when it is left,
/// when the process exits and when it crashes while it is shown (the fatal signals' handlers,
/// in place only then, write the restoring sequence with async-signal-safe calls and hand the
/// signal to the handler the process had before). The screens of this
/// module (the music picker, the subscription offer) and of the CLI (now playing) draw through
/// it. One at a time per process.
package final class TerminalScreen: @unchecked Sendable {
    // @unchecked: writes are serialized by `lock`; the descriptors are fixed.
    package let input: Int32
    package let output: Int32
    private let lock = NSLock()

    package init(input: Int32, output: Int32) {
        self.input = input
        self.output = output
    }

    /// Whether `output` is a terminal that can show a full screen (TERM set and not "dumb").
    package static func canShow(on output: Int32, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        let term = environment["TERM"] ?? ""
        return isatty(output) == 1 && !term.isEmpty && term != "dumb"
    }

    /// The terminal's size in cells (80×24 when it does not say).
    package var size: (columns: Int, rows: Int) {
        var window = winsize()
        guard ioctl(output, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0, window.ws_row > 0 else { return (80, 24) }
        return (Int(window.ws_col), Int(window.ws_row))
    }

    /// The size of a cell in pixels, when the terminal says (its window's pixel size over its
    /// cells); 10×20 when it does not.
    package var cellPixels: (width: Int, height: Int) {
        var window = winsize()
        guard ioctl(output, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0, window.ws_row > 0,
              window.ws_xpixel > 0, window.ws_ypixel > 0 else { return (10, 20) }
        return (Int(window.ws_xpixel) / Int(window.ws_col), Int(window.ws_ypixel) / Int(window.ws_row))
    }

    /// Switches to the alternate screen, hides the cursor and, with `rawKeys`, makes `input`
    /// deliver keys one by one without echo.
    package func enter(rawKeys: Bool) {
        Restoration.install(input: input, output: output, rawKeys: rawKeys)
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[2J")
    }

    /// Back to the main screen, the cursor and the line discipline as they were (once).
    package func leave() {
        Restoration.restore()
    }

    /// Writes `text` in one go (serialized with other writes).
    package func write(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        var bytes = Array(text.utf8)
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            bytes.removeFirst(written)
        }
    }

    /// `lines` as the whole screen: from the top, each line cleared to its end, the rest cleared.
    package func draw(_ lines: [String]) {
        write("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J")
    }

    /// What puts the terminal back, from anywhere (including a signal handler). Its fatal-signal
    /// handlers are in place only while a screen is shown: `install` keeps the handlers the
    /// process had (the app's own, or the default) and `restore` puts them back, and a fatal
    /// signal meanwhile restores the terminal and is handed to them.
    private enum Restoration {
        nonisolated(unsafe) static var saved = termios()
        nonisolated(unsafe) static var hasSaved = false
        nonisolated(unsafe) static var active = false
        nonisolated(unsafe) static var input: Int32 = 0
        nonisolated(unsafe) static var output: Int32 = 1
        nonisolated(unsafe) static var atExitRegistered = false
        static let sequence: [UInt8] = Array("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l".utf8)
        static let fatalSignals = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP]
        /// The handlers the process had before `install`, by position in `fatalSignals` (memory
        /// of its own: a signal handler reads it, without Swift's access checks).
        nonisolated(unsafe) static let previousHandlers: UnsafeMutablePointer<sigaction> = {
            let handlers = UnsafeMutablePointer<sigaction>.allocate(capacity: 6)
            handlers.initialize(repeating: sigaction(), count: 6)
            return handlers
        }()

        static func install(input: Int32, output: Int32, rawKeys: Bool) {
            Restoration.input = input
            Restoration.output = output
            hasSaved = tcgetattr(input, &saved) == 0
            if rawKeys && hasSaved {
                var raw = rawKeyMode(of: saved)
                tcsetattr(input, TCSANOW, &raw)
            }
            guard !active else { return }
            active = true
            if !atExitRegistered {
                atExitRegistered = true
                atexit { Restoration.restore() }
            }
            for (index, number) in fatalSignals.enumerated() {
                var action = sigaction()
                action.__sigaction_handler.sa_handler = { number in
                    // Async-signal-safe only: write, tcsetattr, sigaction, raise.
                    Restoration.restore()
                    raise(number)  // now with the handler the process had
                }
                sigaction(number, &action, previousHandlers + index)
            }
        }

        static func restore() {
            guard active else { return }
            active = false
            for (index, number) in fatalSignals.enumerated() { sigaction(number, previousHandlers + index, nil) }
            sequence.withUnsafeBytes { _ = Glibc.write(output, $0.baseAddress, $0.count) }
            if hasSaved { tcsetattr(input, TCSANOW, &saved) }
        }
    }
}

/// `attributes` with keys delivered one by one as they are typed, without echo (the line
/// discipline's other settings, Ctrl-C among them, unchanged).
package func rawKeyMode(of attributes: termios) -> termios {
    var raw = attributes
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
    withUnsafeMutableBytes(of: &raw.c_cc) { bytes in
        bytes[Int(VMIN)] = 1
        bytes[Int(VTIME)] = 0
    }
    return raw
}

/// `text`, safe for a terminal, cut to `width` characters with an ellipsis.
package func fitted(_ text: String, width: Int) -> String {
    let safe = terminalSafe(text, keepingLines: false)
    guard width > 0 else { return "" }
    return safe.count <= width ? safe : String(safe.prefix(width - 1)) + "…"
}

/// `text` with every control character shown instead of obeyed: C0 controls as `\e`, `\r`,
/// `\t`, `\n` or `\xNN`, DEL and the C1 controls (U+0080–U+009F, which some terminals also
/// obey) as `\u{NN}`. With `keepingLines`, newlines and tabs are kept as they are. Titles,
/// artists, tags and paths come from outside: a tag holding `ESC ] 0; … BEL` or `ESC [2J` must
/// not retitle or clear the person's terminal.
package func terminalSafe(_ text: String, keepingLines: Bool) -> String {
    guard text.unicodeScalars.contains(where: { isTerminalControl($0, keepingLines: keepingLines) }) else { return text }
    var result = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
        guard isTerminalControl(scalar, keepingLines: keepingLines) else {
            result.append(scalar)
            continue
        }
        let shown: String = switch scalar.value {
        case 0x1B: "\\e"
        case 0x0D: "\\r"
        case 0x0A: "\\n"
        case 0x09: "\\t"
        case 0..<0x20: "\\x" + String(format: "%02X", scalar.value)
        default: "\\u{" + String(format: "%02X", scalar.value) + "}"
        }
        result.append(contentsOf: shown.unicodeScalars)
    }
    return String(result)
}

private func isTerminalControl(_ scalar: Unicode.Scalar, keepingLines: Bool) -> Bool {
    switch scalar.value {
    case 0x0A, 0x09: !keepingLines
    case 0..<0x20, 0x7F, 0x80...0x9F: true
    default: false
    }
}
