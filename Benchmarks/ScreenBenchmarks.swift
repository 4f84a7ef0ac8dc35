import AudioEngine
import AudioMeasurement
import CLinux
import Foundation
import Glibc
import MusicKitCore

/// The terminal screens' response to a key, as a person feels it: a key written to the screen's
/// terminal (a pseudo-terminal the benchmark holds) until the redrawn screen's bytes that show
/// its effect come back. `musickit play`'s now-playing screen while the music plays (`r` cycles
/// the repeat mode), and `musickit pick`'s search field (each character typed shows in the field;
/// the catalog's answers follow). Goal: under 16 ms (one frame at 60 Hz) at p95.
struct ScreenBenchmarks {
    let musickit: URL
    let device: String
    let song: URL
    let runs: Int
    let report: Report

    func run() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-screen-bench-\(getpid())")
        defer { try? FileManager.default.removeItem(at: root) }
        var environment = ProcessInfo.processInfo.environment
        environment["MUSICKIT_CONFIG_DIR"] = root.appendingPathComponent("config").path
        environment["MUSICKIT_DATA_DIR"] = root.appendingPathComponent("data").path
        environment["MUSICKIT_RUNTIME_DIR"] = root.appendingPathComponent("runtime").path
        environment["TERM"] = "xterm-256color"
        environment["NO_COLOR"] = nil

        // Now playing, while the song plays.
        let play = try PseudoTerminal([musickit.path, "play", "--device", device, song.path], environment: environment)
        guard play.waitForOutput(containing: "▶ Playing", seconds: 10) else {
            report.add(Row("now-playing screen: key -> screen redrawn", unit: "ms", values: [], note: "the screen did not show"))
            return
        }
        var keys: [Double] = []
        let modes = ["repeat all", "repeat one", "repeat off"]
        for index in 0..<(max(runs, 3) * 4) {
            let started = monotonicNanoseconds()
            play.type("r")
            if play.waitForOutput(containing: modes[index % 3], seconds: 2) {
                keys.append(Double(monotonicNanoseconds() - started) / 1e6)
            }
        }
        play.type("q")
        play.waitForExit()
        report.add(Row("now-playing screen: key -> screen redrawn (r, while music plays)", unit: "ms", values: keys,
                       note: "p95 \(format(Summary.quantile(keys, 0.95))) ms (goal: under 16 ms); through a pseudo-terminal"))

        // The picker's search field, on the bundled catalog.
        let authorize = Process()
        authorize.executableURL = musickit
        authorize.arguments = ["authorize", "musickit", "--allow"]
        authorize.environment = environment
        authorize.standardOutput = FileHandle.nullDevice
        try authorize.run()
        authorize.waitUntilExit()
        var typed: [Double] = []
        var answered: [Double] = []
        for _ in 0..<max(runs, 3) {
            let pick = try PseudoTerminal([musickit.path, "pick"], environment: environment)
            guard pick.waitForOutput(containing: "Type to search", seconds: 10) else { break }
            var term = ""
            for character in "elysia" {
                term.append(character)
                let started = monotonicNanoseconds()
                pick.type(String(character))
                if pick.waitForOutput(containing: "Search: \(term)", seconds: 2) {
                    typed.append(Double(monotonicNanoseconds() - started) / 1e6)
                }
            }
            // The answers: from an empty field (Ctrl-U clears it and its answers), the term arrives
            // at once (pasted) and the catalog's answers for it are drawn.
            for _ in 0..<4 {
                pick.type("\u{15}")
                guard pick.waitForOutput(containing: "Type to search", seconds: 2) else { break }
                let started = monotonicNanoseconds()
                pick.type("elysia")
                if pick.waitForOutput(containing: "Elysia —", seconds: 2) {
                    answered.append(Double(monotonicNanoseconds() - started) / 1e6)
                }
            }
            pick.type("\u{1B}")
            pick.waitForExit()
        }
        report.add(Row("music picker: key -> the search field shows it", unit: "ms", values: typed,
                       note: "p95 \(format(Summary.quantile(typed, 0.95))) ms (goal: under 16 ms); typing \"elysia\""))
        report.add(Row("music picker: term pasted -> the catalog's answers drawn", unit: "ms", values: answered,
                       note: "p95 \(format(Summary.quantile(answered, 0.95))) ms; \"elysia\" into an empty field, until the album Elysia shows"))
    }
}

/// A program on a pseudo-terminal of its own (100×30): its controlling terminal, input and output.
final class PseudoTerminal {
    private let master: Int32
    private let pid: pid_t
    private var pending = ""

    init(_ arguments: [String], environment: [String: String]) throws {
        master = posix_openpt(O_RDWR | O_NOCTTY)
        guard master >= 0, grantpt(master) == 0, unlockpt(master) == 0, let name = ptsname(master) else {
            throw POSIXError(.ENOTTY)
        }
        var size = winsize(ws_row: 30, ws_col: 100, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)
        let slave = String(cString: name)
        pid = try spawnProcess(arguments, environment: environment, outputPath: slave, newSession: true, inputPath: slave).get()
    }

    deinit {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        close(master)
    }

    /// Writes `keys` as typed; what the program wrote before is forgotten.
    func type(_ keys: String) {
        drain()
        pending = ""
        _ = keys.withCString { write(master, $0, strlen($0)) }
    }

    /// Reads the program's output until `text` appears (true) or `seconds` pass (false).
    func waitForOutput(containing text: String, seconds: Double) -> Bool {
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !pending.contains(text) {
            let now = monotonicNanoseconds()
            guard now < deadline else { return false }
            var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32((deadline - now) / 1_000_000) + 1) > 0 else { continue }
            let count = read(master, &buffer, buffer.count)
            if count <= 0 { return false }
            pending += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        return true
    }

    /// Reads what is there without waiting.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        while poll(&poller, 1, 0) > 0, read(master, &buffer, buffer.count) > 0 {}
    }

    /// Waits (up to 5 s) for the program to end, reading its output meanwhile.
    func waitForExit() {
        let deadline = monotonicNanoseconds() + 5_000_000_000
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 && monotonicNanoseconds() < deadline {
            var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, 50)  // its last frames, or 50 ms
            drain()
        }
    }
}
