import AudioEngine
import AudioMeasurement
import Foundation
import Glibc
import MusicKitCore

/// Fuzzing musickitd's three doors: MPD command lines (its socket), the system player's own
/// wire (framed JSON) and MPRIS calls (`busctl` on a private session bus). Each case is built by
/// a seeded generator — a well-formed request of the protocol with hostile values put in
/// (huge, negative and non-finite numbers, bad ranges, files that are not audio, devices,
/// lone surrogates, deep nesting, broken quotes and frames) and byte-level mutations on top —
/// and sent on a connection of its own. After each case another client, connected all along,
/// must get an answer to `status` within `answerSeconds`; at the end the daemon must be alive
/// and, stopped, idle. A case that breaks one of these is a finding, kept for replay.
struct ProtocolFuzzBenchmarks {
    let musickitd: URL
    /// The daemon's audio device (the test sink), so that what the cases play is played.
    let device: String
    let cases: Int
    let seed: UInt64
    /// Audio files the cases queue: well-formed ones.
    let songs: [URL]
    let report: Report
    static let answerSeconds = 5.0

    enum Door: String, CaseIterable { case mpd = "MPD", wire, mpris = "MPRIS" }

    struct Findings {
        var cases: [Door: Int] = [:]
        /// Cases the daemon answered, refused with an error (ACK, `ok: false`, a D-Bus error),
        /// or ended the connection of (a limit, a malformed frame).
        var answered = 0
        var refused = 0
        var dropped = 0
        var failures: [String] = []
    }

    @discardableResult
    func run(findingsDirectory: URL) throws -> Findings {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-protocol-fuzz-\(getpid())")
        try? FileManager.default.removeItem(at: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let runtime = root.appendingPathComponent("run")
        for folder in ["config", "data", "run", "files"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        chmod(runtime.path, 0o700)
        let files = try hostileFiles(in: root.appendingPathComponent("files"))
        let bus = try startBus(at: root.appendingPathComponent("bus"))
        defer { if let bus { kill(bus.process, SIGKILL); waitpid(bus.process, nil, 0) } }

        var environment = ProcessInfo.processInfo.environment
        environment["MUSICKIT_CONFIG_DIR"] = root.appendingPathComponent("config").path
        environment["MUSICKIT_DATA_DIR"] = root.appendingPathComponent("data").path
        environment["MUSICKIT_RUNTIME_DIR"] = runtime.path
        environment["MUSICKIT_AUDIO_DEVICE"] = device
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus?.address ?? "unix:path=/nonexistent"
        // posix_spawn, not Foundation's Process (see spawnProcess), and reaped here by waitpid.
        let daemon = try spawnProcess([musickitd.path], environment: environment,
                                      outputPath: root.appendingPathComponent("musickitd.log").path, newSession: false).get()
        var daemonStatus: Int32?
        /// Whether the daemon still runs; once it ended, how (`daemonStatus`).
        func daemonRuns() -> Bool {
            guard daemonStatus == nil else { return false }
            var status: Int32 = 0
            if waitpid(daemon, &status, WNOHANG) == daemon { daemonStatus = status; return false }
            return true
        }
        defer {
            if daemonRuns() { kill(daemon, SIGKILL); waitpid(daemon, nil, 0) }
        }
        let mpdPath = runtime.appendingPathComponent("mpd.sock").path
        let wirePath = runtime.appendingPathComponent("player.sock").path
        let started = Date()
        while (access(mpdPath, F_OK) != 0 || access(wirePath, F_OK) != 0) && Date().timeIntervalSince(started) < 10 {
            usleep(10_000)
        }
        guard let watcher = try? LineConnection(unixSocket: mpdPath), watcher.readGreeting() else {
            throw FuzzError(description: "musickitd did not start (no \(mpdPath))")
        }
        var generator = CatalogBenchmarks.Generator(state: seed)
        var findings = Findings()
        let context = Context(songs: songs.map(\.path), hostile: files, mpdPath: mpdPath, wirePath: wirePath, bus: bus?.address)
        let clock = monotonicNanoseconds()
        for index in 0..<cases {
            // Half MPD (the most commands), a third the wire, the rest MPRIS (each call a process).
            let pick = generator.next() % 6
            let door: Door = pick < 3 ? .mpd : pick < 5 ? .wire : (bus == nil ? .mpd : .mpris)
            findings.cases[door, default: 0] += 1
            let sent: String
            let outcome: Outcome
            switch door {
            case .mpd: (sent, outcome) = mpdCase(&generator, context)
            case .wire: (sent, outcome) = wireCase(&generator, context)
            case .mpris: (sent, outcome) = mprisCase(&generator, context)
            }
            switch outcome {
            case .answered: findings.answered += 1
            case .refused: findings.refused += 1
            case .dropped: findings.dropped += 1
            }
            let alive = daemonRuns()
            let answer = alive ? watcher.exchange("status\n", timeout: Self.answerSeconds) : nil
            if !alive || answer?.hasSuffix("OK\n") != true {
                let what = !alive ? "the daemon ended (wait status \(daemonStatus ?? 0): signal \((daemonStatus ?? 0) & 0x7F))"
                    : "another client's status went unanswered for \(Self.answerSeconds) s"
                findings.failures.append("case \(index) (\(door.rawValue)): \(what)")
                keep("case \(index) (\(door.rawValue)), seed \(seed): \(what)\n\n\(sent)", named: "protocol-\(seed)-\(index).txt",
                     in: findingsDirectory)
                break
            }
        }
        let seconds = Double(monotonicNanoseconds() - clock) / 1e9
        // Stopped with an empty queue, the daemon must be idle: nothing left spinning.
        if daemonRuns(), watcher.exchange("stop\nclear\n", timeout: Self.answerSeconds, untilComplete: 2) != nil {
            Thread.sleep(forTimeInterval: 0.5)
            let before = CostBenchmarks.Sample(pid: daemon)
            Thread.sleep(forTimeInterval: 1)
            let used = Double(before.until(CostBenchmarks.Sample(pid: daemon)).cpuNanoseconds) / 1e9
            if used > 0.2 {
                findings.failures.append(String(format: "stopped and cleared, the daemon still used %.2f s of CPU in 1 s", used))
            }
        }
        let counts = Door.allCases.map { "\(findings.cases[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
        report.add(Row("protocol fuzzing: daemon failures", unit: "count", values: [Double(findings.failures.count)],
                       note: "\(counts) cases, seed \(seed), \(String(format: "%.1f", seconds)) s: \(findings.answered) answered, "
                           + "\(findings.refused) refused with an error, \(findings.dropped) connections ended by the daemon; "
                           + "after each, another client's status answered within \(Int(Self.answerSeconds)) s"
                           + (findings.failures.isEmpty ? "" : "; " + findings.failures.joined(separator: "; "))))
        return findings
    }

    struct FuzzError: Error, CustomStringConvertible { let description: String }

    enum Outcome { case answered, refused, dropped }

    struct Context {
        let songs: [String]
        let hostile: [String]
        let mpdPath: String
        let wirePath: String
        let bus: String?
    }

    // MARK: - Values

    /// Numbers as clients may send them: fine ones, and the ones that crashed or spun daemons.
    static let numbers = ["0", "1", "2", "5", "-1", "-0", "0.5", "1e15", "1e300", "1e999", "-1e300", "inf", "-inf", "nan",
                          "9223372036854775807", "9223372036854775808", "-9223372036854775809", "2147483648",
                          "99999999999999999999999", "0x10", "+5", "", "1,5", "١"]
    static let ranges = ["0:1", "0:", ":", "1:0", "-1:", "0:-1", "5:99999999999", "9223372036854775807:", "0:1:2", "a:b"]
    static let words = ["", " ", "\"", "\\", "\"unterminated", "a\"b", "É", "\u{FFFD}", "title", "artist", "album", "any",
                        "file", "genre", "date", "ezer", String(repeating: "x", count: 300)]

    private func uri(_ generator: inout CatalogBenchmarks.Generator, _ context: Context) -> String {
        let all = context.songs + context.hostile + [
            "/etc/passwd", "/etc/shadow", "/dev/zero", "/dev/urandom", "/proc/self/mem", "/", "/tmp", "relative.flac", "~",
            "file:///etc/passwd", "file://", "file:///dev/zero", "musickit:", "musickit:1762000001", "musickit:../../x",
            "musickit:" + String(repeating: "9", count: 400), "http://127.0.0.1:1/x.m4a", ""]
        return all[Int(generator.next() % UInt64(all.count))]
    }

    private func pick(_ values: [String], _ generator: inout CatalogBenchmarks.Generator) -> String {
        values[Int(generator.next() % UInt64(values.count))]
    }

    // MARK: - MPD

    private func mpdCase(_ generator: inout CatalogBenchmarks.Generator, _ context: Context) -> (String, Outcome) {
        var lines: [String] = []
        for _ in 0..<(1 + Int(generator.next() % 4)) { lines.append(mpdLine(&generator, context)) }
        switch generator.next() % 20 {
        case 0: lines = ["command_list_begin"] + lines + ["command_list_end"]
        case 1: lines = ["command_list_ok_begin"] + lines + ["command_list_end"]
        case 2: lines = ["command_list_begin"] + lines  // never ended: the connection closes
        case 3: lines += ["idle", generator.next() % 2 == 0 ? "noidle" : "status"]
        case 4: lines.append(String(repeating: "a", count: 70_000))  // past the line limit
        default: break
        }
        var text = lines.joined(separator: "\n") + "\n"
        if generator.next() % 8 == 0 { text = mutateBytes(text, &generator) }
        guard let connection = try? LineConnection(unixSocket: context.mpdPath), connection.readGreeting() else { return (text, .dropped) }
        let reply = connection.exchange(text, timeout: 0.5, untilComplete: lines.first?.hasPrefix("command_list") == true ? 1 : lines.count)
        let outcome: Outcome = reply == nil ? .dropped : reply!.contains("ACK [") ? .refused : .answered
        return (text, outcome)
    }

    private func mpdLine(_ generator: inout CatalogBenchmarks.Generator, _ context: Context) -> String {
        func quoted(_ text: String) -> String { generator.next() % 3 == 0 ? text : "\"\(text.replacingOccurrences(of: "\"", with: "\\\""))\"" }
        let number = pick(Self.numbers, &generator)
        let other = pick(Self.numbers, &generator)
        switch generator.next() % 30 {
        case 0: return "add \(quoted(uri(&generator, context)))"
        case 1: return "addid \(quoted(uri(&generator, context))) \(number)"
        case 2: return "play \(number)"
        case 3: return "playid \(number)"
        case 4: return "seek \(number) \(other)"
        case 5: return "seekid \(number) \(other)"
        case 6: return "seekcur \(pick(["", "+", "-"], &generator))\(number)"
        case 7: return "pause \(pick(["", "0", "1", "2", "-1"], &generator))"
        case 8: return pick(["next", "previous", "stop", "play", "status", "currentsong", "clear", "ping", "clearerror"], &generator)
        case 9: return "delete \(pick(Self.ranges + Self.numbers, &generator))"
        case 10: return "deleteid \(number)"
        case 11: return "move \(pick(Self.ranges + Self.numbers, &generator)) \(other)"
        case 12: return "playlistinfo \(pick(Self.ranges + Self.numbers, &generator))"
        case 13: return "playlistid \(number)"
        case 14: return "plchanges \(number)"
        case 15: return "\(pick(["repeat", "random", "single", "consume"], &generator)) \(pick(["0", "1", "2", "", "on"], &generator))"
        case 16: return "find \(quoted(pick(Self.words, &generator))) \(quoted(pick(Self.words, &generator)))"
        case 17: return "search \(quoted(pick(Self.words, &generator))) \(quoted(pick(Self.words, &generator)))"
        case 18: return "list \(pick(Self.words, &generator)) \(quoted(pick(Self.words, &generator)))"
        case 19: return pick(["tagtypes", "outputs", "commands", "noidle", "close", "idle player", "idle nonsense"], &generator)
        case 20: return "frobnicate \(number)"
        case 21: return "\"unterminated \(number)"
        case 22: return "seek \(number)"  // an argument short
        case 23: return "add"
        case 24: return "status extra arguments \(number)"
        case 25: return "\(pick(["play", "seekcur", "add", "delete"], &generator))\t\(number)"
        case 26: return String(decoding: (0..<(1 + generator.next() % 40)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }, as: UTF8.self)
        case 27: return "addid \(quoted(context.songs[Int(generator.next() % UInt64(context.songs.count))])) 0"
        case 28: return "single \(pick(["0", "1"], &generator))"
        default: return "add \(quoted(context.songs[Int(generator.next() % UInt64(context.songs.count))]))"
        }
    }

    /// One to three byte-level changes: a byte flipped, inserted or removed, a piece doubled.
    private func mutateBytes(_ text: String, _ generator: inout CatalogBenchmarks.Generator) -> String {
        var bytes = Array(text.utf8)
        for _ in 0..<(1 + Int(generator.next() % 3)) where !bytes.isEmpty {
            let at = Int(generator.next() % UInt64(bytes.count))
            switch generator.next() % 4 {
            case 0: bytes[at] ^= UInt8(truncatingIfNeeded: 1 << (generator.next() % 8))
            case 1: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: at)
            case 2: bytes.remove(at: at)
            default: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 16)], at: at)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: - The wire

    private func wireCase(_ generator: inout CatalogBenchmarks.Generator, _ context: Context) -> (String, Outcome) {
        let json = wireRequest(&generator, context)
        var body = Array(json.utf8)
        var length = body.count
        switch generator.next() % 16 {
        case 0: body = Array(mutateBytes(json, &generator).utf8); length = body.count
        case 1: length = body.count + 1 + Int(generator.next() % 100)  // promises more than it sends
        case 2: length = max(0, body.count - 1 - Int(generator.next() % 10))  // less: the rest is a new frame
        case 3: length = 0
        case 4: length = Int(UInt32.max)
        case 5: body = Array(body.prefix(Int(generator.next() % UInt64(body.count + 1))))  // cut off, then closed
        default: break
        }
        var frame = [UInt8(truncatingIfNeeded: length >> 24), UInt8(truncatingIfNeeded: length >> 16),
                     UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        frame += body
        guard let connection = try? LineConnection(unixSocket: context.wirePath) else { return (json, .dropped) }
        let wholeFrame: ([UInt8]) -> Bool = { reply in
            guard reply.count >= 4 else { return false }
            let size = Int(reply[0]) << 24 | Int(reply[1]) << 16 | Int(reply[2]) << 8 | Int(reply[3])
            return reply.count >= 4 + size
        }
        guard let reply = connection.exchange(bytes: frame, timeout: 0.5, until: wholeFrame) else { return (json, .dropped) }
        return (json, String(decoding: reply, as: UTF8.self).contains("\"ok\":false") ? .refused : .answered)
    }

    private func wireRequest(_ generator: inout CatalogBenchmarks.Generator, _ context: Context) -> String {
        func number() -> String {
            pick(["0", "1", "-1", "0.5", "1e15", "1e300", "1e999", "-1e999", "9223372036854775807", "9223372036854775808",
                  "-9223372036854775809", "\"5\"", "null", "true", "[]", "{}"], &generator)
        }
        func string() -> String {
            pick(["\"\"", "\"all\"", "\"one\"", "\"songs\"", "\"tail\"", "\"\\ud800\"", "\"\\ud800\\u0041\"", "\"\\udfff\\ud800\"",
                  "\"\\u0000\"", "1", "null", "[\"x\"]"], &generator)
        }
        func entry() -> String {
            let path = uri(&generator, context)
            let resource = generator.next() % 5 == 0 ? number()
                : "{\"id\":\(pick(["\"i.1\"", "\"\"", "1", "null"], &generator)),\"type\":\"library-songs\",\"attributes\":"
                + "{\"filePath\":\"\(path.replacingOccurrences(of: "\"", with: "\\\""))\",\"name\":\"x\","
                + "\"durationInMillis\":\(number())}}"
            return "{\"resource\":\(resource),\"start\":\(number()),\"end\":\(number())}"
        }
        func parts() -> String {
            switch generator.next() % 5 {
            case 0: return "[{\"container\":{\"id\":\"p.1\",\"type\":\"library-playlists\"},\"from\":\(number()),\"to\":\(number())}]"
            case 1: return number()
            case 2: return "[" + String(repeating: "[", count: 50_000) + String(repeating: "]", count: 50_000) + "]"
            default: return "[{\"entries\":[" + (0..<(1 + generator.next() % 4)).map { _ in entry() }.joined(separator: ",") + "]}]"
            }
        }
        let op = pick(["hello", "state", "setQueue", "insert", "play", "prepare", "pause", "stop", "next", "previous", "restart",
                       "seek", "beginSeekingForward", "beginSeekingBackward", "endSeeking", "rate", "modes", "frobnicate", "",
                       "setQueue", "seek", "rate", "modes", "insert"], &generator)
        let args: String
        switch op {
        case "hello": args = "{\"subscribe\":\(pick(["true", "false", "1", "\"yes\""], &generator))}"
        case "setQueue": args = "{\"parts\":\(parts()),\"start\":\(number())}"
        case "insert": args = "{\"parts\":\(parts()),\"position\":\(string())}"
        case "seek": args = "{\"time\":\(number())}"
        case "rate": args = "{\"rate\":\(number())}"
        case "modes": args = "{\"repeat\":\(string()),\"shuffle\":\(string())}"
        default: args = generator.next() % 2 == 0 ? "{}" : number()
        }
        let version = generator.next() % 10 == 0 ? number() : "1"
        return "{\"v\":\(version),\"id\":\(number()),\"op\":\"\(op)\",\"args\":\(args)}"
    }

    // MARK: - MPRIS

    private func mprisCase(_ generator: inout CatalogBenchmarks.Generator, _ context: Context) -> (String, Outcome) {
        guard let bus = context.bus else { return ("", .dropped) }
        let player = "org.mpris.MediaPlayer2.Player"
        let number = pick(["0", "1", "-1", "1000000", "-9223372036854775808", "9223372036854775807", "30000000"], &generator)
        let double = pick(["0", "1", "-1", "0.5", "64", "1e308", "-1e308", "nan", "inf", "-inf"], &generator)
        var call: [String]
        switch generator.next() % 14 {
        case 0: call = ["call", player, "Seek", "x", number]
        case 1: call = ["call", player, "SetPosition", "ox", pick(["/org/musickit/track/1", "/", "/org/mpris/MediaPlayer2/TrackList/NoTrack"],
                                                                    &generator), number]
        case 2: call = ["call", player, "OpenUri", "s", uri(&generator, context)]
        case 3: call = ["set-property", player, "LoopStatus", "s", pick(["None", "Track", "Playlist", "", "Everything"], &generator)]
        case 4: call = ["set-property", player, "Shuffle", "b", pick(["true", "false"], &generator)]
        case 5: call = ["set-property", player, "Rate", "d", double]
        case 6: call = ["set-property", player, "Volume", "d", double]
        case 7: call = ["call", player, pick(["Play", "Pause", "PlayPause", "Stop", "Next", "Previous"], &generator)]
        case 8: call = ["call", player, "Seek", "s", "soon"]  // the wrong signature
        case 9: call = ["call", player, "OpenUri", "x", number]
        case 10: call = ["call", player, "Frobnicate"]
        case 11: call = ["call", "org.freedesktop.DBus.Properties", "Get", "ss", player, pick(["Position", "Metadata", "Nope", ""], &generator)]
        case 12: call = ["call", "org.freedesktop.DBus.Properties", "GetAll", "s", pick([player, "org.mpris.MediaPlayer2", "x.y"], &generator)]
        default: call = ["set-property", "org.mpris.MediaPlayer2", "Fullscreen", "b", "true"]
        }
        let arguments = ["--address=\(bus)", "--timeout=2", call[0], "org.mpris.MediaPlayer2.musickit", "/org/mpris/MediaPlayer2"]
            + call.dropFirst()
        let text = "busctl " + arguments.joined(separator: " ")
        guard case .success(let process) = spawnProcess(["/usr/bin/busctl"] + arguments, environment: [:],
                                                        outputPath: "/dev/null", newSession: false) else { return (text, .dropped) }
        var status: Int32 = 0
        while waitpid(process, &status, 0) < 0 && errno == EINTR {}
        return (text, status == 0 ? .answered : .refused)
    }

    // MARK: - Support

    /// Files that are not what they seem: empty, text named .flac, a directory named .wav, a
    /// pipe, a link to /dev/zero, a truncated WAV header.
    private func hostileFiles(in directory: URL) throws -> [String] {
        let empty = directory.appendingPathComponent("empty.flac")
        _ = FileManager.default.createFile(atPath: empty.path, contents: Data())
        let text = directory.appendingPathComponent("text.flac")
        try Data("not audio at all\n".utf8).write(to: text)
        let folder = directory.appendingPathComponent("folder.wav")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let pipe = directory.appendingPathComponent("pipe.ogg")
        mkfifo(pipe.path, 0o600)
        let zero = directory.appendingPathComponent("zero.mp3")
        try? FileManager.default.createSymbolicLink(atPath: zero.path, withDestinationPath: "/dev/zero")
        let header = directory.appendingPathComponent("header.wav")
        try Data("RIFF\u{FF}\u{FF}\u{FF}\u{7F}WAVEfmt ".utf8).write(to: header)
        return [empty, text, folder, pipe, zero, header].map(\.path)
    }

    /// A private session bus (for MPRIS); nil without dbus-daemon and busctl.
    private func startBus(at socket: URL) throws -> (process: pid_t, address: String)? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/busctl") else { return nil }
        let address = "unix:path=\(socket.path)"
        let bus = try spawnProcess(["/usr/bin/dbus-daemon", "--session", "--nofork", "--nopidfile", "--address=\(address)"],
                                   environment: ["PATH": "/usr/bin:/bin"], outputPath: "/dev/null", newSession: false).get()
        let started = Date()
        while access(socket.path, F_OK) != 0 && Date().timeIntervalSince(started) < 5 { usleep(5_000) }
        guard access(socket.path, F_OK) == 0 else {
            kill(bus, SIGKILL)
            waitpid(bus, nil, 0)
            return nil
        }
        return (bus, address)
    }

    private func keep(_ text: String, named name: String, in directory: URL) {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try? Data(text.utf8).write(to: directory.appendingPathComponent(name))
    }
}

/// The fuzzer's exchanges: bytes out, the reply in within a time limit (the daemon may answer
/// nothing, or close).
extension LineConnection {
    func readGreeting() -> Bool {
        exchange(bytes: [], timeout: 5) { $0.contains(UInt8(ascii: "\n")) }.map { $0.starts(with: Array("OK MPD".utf8)) } ?? false
    }

    /// Sends `text`; the reply once it holds `untilComplete` answers (OK or ACK lines), or what
    /// came within `timeout`; nil when the daemon closed the connection before answering.
    func exchange(_ text: String, timeout: TimeInterval, untilComplete answers: Int = 1) -> String? {
        exchange(bytes: Array(text.utf8), timeout: timeout) { reply in
            let text = String(decoding: reply, as: UTF8.self)
            return text.components(separatedBy: "\n").filter { $0 == "OK" || $0.hasPrefix("ACK [") }.count >= answers
                || text.contains("ACK [")
        }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Sends `bytes`; the reply once `done` says it is whole, or what came within `timeout`
    /// (nil when nothing came and the daemon closed the connection).
    func exchange(bytes: [UInt8], timeout: TimeInterval, until done: ([UInt8]) -> Bool) -> [UInt8]? {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return nil }
            offset += sent
        }
        var reply: [UInt8] = []
        let deadline = Date(timeIntervalSinceNow: timeout)
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while !done(reply) {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { break }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { break }
            let count = recv(descriptor, &chunk, chunk.count, 0)
            if count <= 0 { return reply.isEmpty ? nil : reply }
            reply += chunk[0..<count]
        }
        return reply
    }
}
