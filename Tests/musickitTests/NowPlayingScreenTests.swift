import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKitCore
import XCTest

/// `musickit play`'s full screen as a person sees it: the command runs in a real terminal
/// emulator (tmux, on a server of its own), keys are typed with `send-keys` and the screen is
/// read with `capture-pane`.
final class NowPlayingScreenTests: TerminalTestCase {
    private func screen(escapes: Bool = false) throws -> String { try XCTUnwrap(terminal).screen(escapes: escapes) }

    @discardableResult
    private func waitForScreen(_ what: String, file: StaticString = #filePath, line: UInt = #line,
                               _ condition: (String) -> Bool) throws -> String {
        try XCTUnwrap(terminal).waitForScreen(what, file: file, line: line, condition)
    }

    @discardableResult
    private func tmux(_ arguments: [String]) throws -> String { try XCTUnwrap(terminal).tmux(arguments) }

    private func tone(_ name: String, hz: Double, seconds: Double) throws -> URL {
        let url = directory.appendingPathComponent("\(name).flac")
        try writeTone(to: url, hz: hz, seconds: seconds, title: name, album: "Screen Tests")
        return url
    }

    /// Starts `musickit play` in a 100×30 terminal after a line of its own, with `environment`;
    /// returns the file its process ID is written to.
    private func startPlay(_ files: [URL], environment: [String: String] = [:]) throws -> URL {
        try startPlay(files.map(\.path), environment: environment)
    }

    private func startPlay(_ arguments: [String], environment: [String: String] = [:]) throws -> URL {
        let device = try AudioTestEnvironment.requirePulse()
        _ = try SharedMonitor.recorder()  // the null sink plays in real time while it is recorded
        let pidFile = directory.appendingPathComponent("pid")
        // NO_COLOR empty: colours on, whatever the test runner's environment says.
        var variables = folders.merging(["TERM": "xterm-256color", "SWIFT_BACKTRACE": "enable=no", "NO_COLOR": ""]) { $1 }
        variables.merge(environment) { $1 }
        let exports = variables.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        let play = shellQuoted([CommandLineTests.executable.path, "play", "--device", device] + arguments)
        let command = "echo BEFORE; env \(exports) sh -c 'echo $$ > \(pidFile.path); exec \"$0\" \"$@\"' \(play); "
            + "echo AFTER-$?; sleep 60"
        terminal?.stop()
        terminal = try TmuxTerminal(command)
        return pidFile
    }

    /// Shuffled, "Up next" shows what will play, not the queue's order (issue #44): the entry
    /// drawn ahead of time, then how many more come in random order; a skip goes to that entry.
    func testUpNextUnderShuffleShowsTheEntryThatPlaysNext() throws {
        let names = ["Alpha Tone", "Beta Tone", "Gamma Tone", "Delta Tone", "Epsilon Tone"]
        let files = try names.enumerated().map { try tone($0.element, hz: 300 + 110 * Double($0.offset), seconds: 20) }
        _ = try startPlay(["--shuffle"] + files.map(\.path))
        let shown = try waitForScreen("the next entry drawn") { screen in
            screen.contains("▶ Playing") && screen.contains("then 3 more in random order")
        }
        let lines = shown.split(separator: "\n").map(String.init)
        let heading = try XCTUnwrap(lines.firstIndex { $0.contains("Up next") }, shown)
        let next = try XCTUnwrap(names.first { lines[heading + 1].contains($0) }, "the drawn entry: \(lines[heading + 1])")
        try tmux(["send-keys", "-t", "0", "n"])
        try waitForScreen("the entry shown as next, playing") { screen in
            screen.split(separator: "\n").contains { $0.contains(next) && !$0.contains(". ") } && !screen.contains("then 3 more")
        }
    }

    func testTheScreenShowsTheEntryFollowsTheKeysAndTheSizeAndGivesTheTerminalBack() throws {
        let files = try [tone("First Tone", hz: 440, seconds: 20), tone("Second Tone", hz: 660, seconds: 20),
                         tone("Third Tone", hz: 880, seconds: 20)]
        _ = try startPlay(files)
        var shown = try waitForScreen("the first entry playing") { $0.contains("▶ Playing") && $0.contains("First Tone") }
        XCTAssertTrue(shown.contains("Test Tones"), "the artist")
        XCTAssertTrue(shown.contains("Screen Tests"), "the album")
        XCTAssertTrue(shown.contains("Up next") && shown.contains("2. Second Tone") && shown.contains("3. Third Tone"), shown)
        XCTAssertTrue(shown.contains("repeat off · shuffle off"))
        XCTAssertTrue(shown.contains("q quit"), "the keys")
        XCTAssertFalse(shown.contains("BEFORE"), "on the alternate screen")
        try waitForScreen("the time moving on") { $0.contains("0:01 ━") || $0.contains("0:02 ━") }

        try tmux(["send-keys", "-t", "0", " "])
        try waitForScreen("paused") { $0.contains("⏸ Paused") }
        try tmux(["send-keys", "-t", "0", "n"])
        shown = try waitForScreen("the second entry") { $0.contains("Second Tone") && $0.contains("[2/3]") }
        XCTAssertFalse(shown.contains("2. Second Tone"), "no longer upcoming")
        try tmux(["send-keys", "-t", "0", " "])
        try waitForScreen("playing again") { $0.contains("▶ Playing") }
        try tmux(["send-keys", "-t", "0", "r"])
        try waitForScreen("repeat all") { $0.contains("repeat all") }

        // At 80×24 the keys' line still ends with `q quit`, and the device is named.
        try tmux(["resize-window", "-t", "0", "-x", "80", "-y", "24"])
        shown = try waitForScreen("80×24") { screen in
            screen.contains("Second Tone") && screen.split(separator: "\n").allSatisfy { $0.count <= 80 }
        }
        XCTAssertTrue(shown.contains("q quit"), shown)
        XCTAssertTrue(shown.contains("repeat all · shuffle off · on '"), "the device: \(shown)")

        try tmux(["resize-window", "-t", "0", "-x", "50", "-y", "12"])
        shown = try waitForScreen("the smaller size") { screen in
            screen.contains("Second Tone") && screen.split(separator: "\n").allSatisfy { $0.count <= 50 }
        }
        let bar = try XCTUnwrap(shown.split(separator: "\n").first { $0.contains("─") || $0.contains("━") })
        XCTAssertGreaterThan(bar.count, 40, "the progress bar fills the new width: \(bar)")

        try tmux(["send-keys", "-t", "0", "q"])
        shown = try waitForScreen("the shell's lines again") { $0.contains("AFTER-") }
        XCTAssertTrue(shown.contains("BEFORE") && shown.contains("AFTER-0"), shown)
        XCTAssertFalse(shown.contains("Second Tone"), "the screen is gone with the alternate screen")
        XCTAssertEqual(try XCTUnwrap(terminal).modes(), "0 1", "main screen, cursor shown")
    }

    func testACrashGivesTheTerminalBack() throws {
        let pidFile = try startPlay([tone("Only Tone", hz: 440, seconds: 20)])
        try waitForScreen("the entry playing") { $0.contains("Only Tone") }
        let pid = try XCTUnwrap(pid_t(String(contentsOf: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        kill(pid, SIGSEGV)
        let shown = try waitForScreen("the shell's lines again") { $0.contains("AFTER-") }
        XCTAssertTrue(shown.contains("BEFORE") && shown.contains("AFTER-139"), "died of the signal: \(shown)")
        XCTAssertEqual(try XCTUnwrap(terminal).modes(), "0 1", "main screen, cursor shown")
    }

    func testNoColorLeavesColoursOutAndADumbTerminalGetsTheStatusLine() throws {
        _ = try startPlay([tone("Plain Tone", hz: 440, seconds: 20)], environment: ["NO_COLOR": "1"])
        try waitForScreen("the entry playing") { $0.contains("Plain Tone") }
        let escaped = try screen(escapes: true)
        XCTAssertFalse(escaped.range(of: #"\u{1B}\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|38;|48;)"#, options: .regularExpression) != nil,
                       "no colour sequences under NO_COLOR: \(escaped.debugDescription)")
        try tmux(["send-keys", "-t", "0", "q"])
        try waitForScreen("the end") { $0.contains("AFTER-0") }
        _ = try startPlay([tone("Dumb Tone", hz: 440, seconds: 20)], environment: ["TERM": "dumb"])
        let shown = try waitForScreen("the status line") { $0.contains("Dumb Tone") && $0.contains("space n p") }
        XCTAssertTrue(shown.contains("BEFORE"), "not on the alternate screen: \(shown)")
        XCTAssertFalse(shown.contains("Up next"))
        try tmux(["send-keys", "-t", "0", "q"])
        try waitForScreen("the end") { $0.contains("AFTER-0") }
    }

    /// The artwork is drawn from the image: the colours of the cells in the artwork's box average
    /// to the colours of the bundled cover.
    func testTheArtworkIsDrawnFromTheCoverImage() throws {
        let environment = ProcessInfo.processInfo.environment.merging(folders) { $1 }
        let musickit = CommandLineTests.executable.path
        XCTAssertEqual(try runTool(musickit, ["authorize", "musickit", "--allow"], environment: environment).code, 0)
        XCTAssertEqual(try runTool(musickit, ["account", "--subscription", "active"], environment: environment).code, 0)
        _ = try startPlay(["1762000001"], environment: ["COLORTERM": "truecolor"])  // "Ezer Év", on the album Elysia
        try waitForScreen("the song with its artwork") { $0.contains("Ezer Év") && $0.contains("▶ Playing") }
        let cover = try RGBAImage(pngFile: XCTUnwrap(MusicKitEnvironment.bundledAssets()).appendingPathComponent("Artwork/elysia.png").path)

        // The cells of the box (columns 2...37, rows 1...18): their foreground and background colours.
        var sums = (0.0, 0.0, 0.0)
        var cells = 0.0
        let escaped = try screen(escapes: true)
        for line in escaped.split(separator: "\n", omittingEmptySubsequences: false).prefix(18) {
            var foreground: (Double, Double, Double)?
            var background: (Double, Double, Double)?
            var column = 0
            var characters = Substring(line)
            while let first = characters.first {
                if first == "\u{1B}", let end = characters.firstIndex(of: "m") {
                    let codes = characters[characters.index(characters.startIndex, offsetBy: 2)..<end].split(separator: ";").compactMap { Int($0) }
                    var index = 0
                    while index < codes.count {
                        if (codes[index] == 38 || codes[index] == 48) && index + 4 < codes.count && codes[index + 1] == 2 {
                            let colour = (Double(codes[index + 2]), Double(codes[index + 3]), Double(codes[index + 4]))
                            if codes[index] == 38 { foreground = colour } else { background = colour }
                            index += 5
                        } else {
                            if codes[index] == 0 { foreground = nil; background = nil }
                            index += 1
                        }
                    }
                    characters = characters[characters.index(after: end)...]
                    continue
                }
                column += 1
                if (2...37).contains(column), let foreground, let background {
                    sums.0 += (foreground.0 + background.0) / 2
                    sums.1 += (foreground.1 + background.1) / 2
                    sums.2 += (foreground.2 + background.2) / 2
                    cells += 1
                }
                characters = characters.dropFirst()
            }
        }
        XCTAssertGreaterThan(cells, 300, "the box is drawn in 24-bit colours: \(escaped.prefix(600).debugDescription)")
        let drawn = (sums.0 / cells, sums.1 / cells, sums.2 / cells)
        let expected = cover.averageColour
        XCTAssertEqual(drawn.0, expected.red, accuracy: 25, "red: drawn \(drawn), cover \(expected)")
        XCTAssertEqual(drawn.1, expected.green, accuracy: 25, "green")
        XCTAssertEqual(drawn.2, expected.blue, accuracy: 25, "blue")
        try tmux(["send-keys", "-t", "0", "q"])
        try waitForScreen("the end") { $0.contains("AFTER-0") }
    }

    /// What `musickit play` writes to a terminal of `columns`×`rows` cells of 10×20 pixels (a
    /// pseudo-terminal made by Python's pty module), with `environment`, for `seconds`, then
    /// after `q`: the raw bytes, escape sequences and all.
    private func rawOutput(_ file: URL, environment: [String: String], seconds: Double) throws -> String {
        let device = try AudioTestEnvironment.requirePulse()
        _ = try SharedMonitor.recorder()
        let script = """
            import fcntl, os, pty, select, struct, sys, termios, time
            pid, fd = pty.fork()
            if pid == 0:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 1000, 600))
                os.execv(sys.argv[1], sys.argv[1:])
            out, start, quit = b"", time.time(), False
            while True:
                ready, _, _ = select.select([fd], [], [], 0.1)
                if ready:
                    try:
                        data = os.read(fd, 65536)
                    except OSError:
                        break
                    if not data:
                        break
                    out += data
                if not quit and time.time() - start > float(os.environ["SECONDS_BEFORE_QUIT"]):
                    os.write(fd, b"q")
                    quit = True
                if time.time() - start > 30:
                    break
            os.waitpid(pid, 0)
            open(os.environ["RAW_OUTPUT"], "wb").write(out)
            """
        let raw = directory.appendingPathComponent("raw-\(UUID().uuidString)")
        var variables = ProcessInfo.processInfo.environment.merging(folders) { $1 }
        variables.merge(["TERM": "xterm-256color", "NO_COLOR": "", "SWIFT_BACKTRACE": "enable=no",
                         "SECONDS_BEFORE_QUIT": String(seconds), "RAW_OUTPUT": raw.path]) { $1 }
        variables.merge(environment) { $1 }
        let result = try runTool("/usr/bin/python3", ["-c", script, CommandLineTests.executable.path, "play", "--device", device,
                                                      file.path], environment: variables)
        XCTAssertEqual(result.code, 0, result.out)
        return String(decoding: try Data(contentsOf: raw), as: UTF8.self)
    }

    func testArtworkIsDrawnInPixelsOnceWhereTheTerminalShowsThem() throws {
        let album = directory.appendingPathComponent("Album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        let song = album.appendingPathComponent("Pictured.flac")
        try writeTone(to: song, hz: 440, seconds: 20, title: "Pictured", album: "Screen Tests")
        let cover = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Assets/Artwork/angelic-asylum.png")
        try FileManager.default.copyItem(at: cover, to: album.appendingPathComponent("cover.png"))

        // kitty's protocol: the picture sent once (an APC `_G` transmission), though the screen
        // is drawn again as the time moves; the text steps over the 36×18-cell box.
        let kitty = try rawOutput(song, environment: ["MUSICKIT_TERMINAL_GRAPHICS": "kitty"], seconds: 2)
        XCTAssertEqual(kitty.components(separatedBy: "\u{1B}_Ga=T").count - 1, 1, "one picture transmitted")
        XCTAssertGreaterThanOrEqual(kitty.components(separatedBy: "\u{1B}[H").count - 1, 3, "the screen drawn several times")
        XCTAssertTrue(kitty.contains("\u{1B}[36C"), "the text steps over the picture's cells")
        XCTAssertTrue(kitty.contains("Pictured"))
        XCTAssertFalse(kitty.contains("▄") || kitty.contains("▀"), "no block symbols for the artwork")

        // Sixels: one DCS picture.
        let sixel = try rawOutput(song, environment: ["MUSICKIT_TERMINAL_GRAPHICS": "sixel"], seconds: 1)
        XCTAssertEqual(sixel.components(separatedBy: "\u{1B}P").count - 1, 1, "one sixel picture")
        XCTAssertFalse(sixel.contains("\u{1B}_G"))

        // Elsewhere: block symbols, no picture protocol.
        let symbols = try rawOutput(song, environment: [:], seconds: 1)
        XCTAssertFalse(symbols.contains("\u{1B}_G") || symbols.contains("\u{1B}P"))
        XCTAssertTrue(symbols.contains("▄") || symbols.contains("▀") || symbols.contains("█"), "the artwork in block symbols")
    }
}
