import Foundation
import Glibc
import MusicKitCore
import MusicKitTerminal
import Synchronization

/// `musickit play`'s full-screen view on a terminal: the current entry (artwork, title, artist,
/// album), a progress bar with the time, the repeat and shuffle modes, what plays next, the last
/// messages and the keys. Drawn on the alternate screen, which is left — and the cursor shown
/// again — on exit, on Ctrl-C and when the program crashes. Without colour under `NO_COLOR`; not
/// used on a `TERM=dumb` terminal or when standard output is not one (the line output is).
/// Drawing only reads what the player reports; nothing on the audio path waits for it.
final class NowPlayingScreen: @unchecked Sendable {
    // @unchecked: immutable; drawing is serialized by the TerminalScreen.
    struct Model {
        var status: String
        var title: String
        var artist: String?
        var album: String?
        var time: TimeInterval
        var duration: TimeInterval?
        var modes: [String]
        var upcoming: [String]
        var messages: [String]
        /// The artwork for the box `artworkBox` gives.
        var artwork: Art?
    }

    /// Artwork for the screen: lines of block symbols, or pixels (the escape sequences of the
    /// terminal's image protocol, written at the box's corner once per image: the text drawn
    /// afterwards steps over the box instead of writing into it).
    enum Art: Equatable {
        case lines([String])
        case pixels(String)
    }

    let colours: Bool
    /// How the terminal shows pictures pixel by pixel, if it does (never under NO_COLOR).
    let pixelProtocol: TerminalImage.PixelProtocol?
    private let terminal = TerminalScreen(input: 0, output: 1)
    /// The pixels last written into the artwork box, if any, and the terminal's size then.
    private let drawnPixels = Mutex<DrawnPixels?>(nil)

    private struct DrawnPixels: Equatable {
        let image: String
        let columns: Int
        let rows: Int
    }

    /// The screen when standard output is a terminal that can show it; nil otherwise.
    init?() {
        let environment = ProcessInfo.processInfo.environment
        guard TerminalScreen.canShow(on: 1, environment: environment) else { return nil }
        colours = (environment["NO_COLOR"] ?? "").isEmpty
        pixelProtocol = colours ? TerminalImage.PixelProtocol.fromEnvironment(environment) : nil
    }

    /// The size of one cell in pixels.
    var cellPixels: (width: Int, height: Int) { terminal.cellPixels }

    /// The terminal's size in cells.
    var size: (columns: Int, rows: Int) { terminal.size }

    /// Switches to the alternate screen and hides the cursor; from now until `leave()`, an exit
    /// or a crash puts the terminal back (called before the keys' raw mode, which is then undone too).
    func enter() {
        terminal.enter(rawKeys: false)
    }

    func leave() {
        terminal.leave()
    }

    /// The size of the artwork box for the current terminal, in cells (width, height); nil when
    /// there is no room for it beside the text.
    func artworkBox(columns: Int, rows: Int) -> (columns: Int, rows: Int)? {
        let height = min(rows - 4, 18)
        let width = height * 2  // cells are about twice as tall as they are wide
        guard height >= 6, columns - width - 3 >= 30 else { return nil }
        return (width, height)
    }

    func draw(_ model: Model) {
        let (columns, rows) = size
        terminal.draw(lines(model, columns: columns, rows: rows))
        var image: String?
        if case .pixels(let pixels)? = model.artwork, artworkBox(columns: columns, rows: rows) != nil { image = pixels }
        // Drawn again when it changes, and after a resize (a terminal may drop pictures then).
        let drawn = image.map { DrawnPixels(image: $0, columns: columns, rows: rows) }
        let previous = drawnPixels.withLock { last in
            defer { last = drawn }
            return last
        }
        guard drawn != previous else { return }
        // kitty keeps images until they are deleted; sixels and iTerm2's images are overwritten.
        var output = pixelProtocol == .kitty && previous != nil ? "\u{1B}_Ga=d\u{1B}\\" : ""
        if let image { output += "\u{1B}7\u{1B}[1;2H" + image + "\u{1B}8" }
        if !output.isEmpty { terminal.write(output) }
    }

    /// The screen's lines for `model` at `columns`×`rows`.
    func lines(_ model: Model, columns: Int, rows: Int) -> [String] {
        let box = model.artwork == nil ? nil : artworkBox(columns: columns, rows: rows)
        let left = box.map { $0.columns + 3 } ?? 1
        let width = max(10, columns - left - 1)
        func bold(_ text: String) -> String { "\u{1B}[1m" + text + "\u{1B}[22m" }
        func dim(_ text: String) -> String { colours ? "\u{1B}[2m" + text + "\u{1B}[22m" : text }
        func accent(_ text: String) -> String { colours ? "\u{1B}[36m" + text + "\u{1B}[39m" : text }

        var panel: [String] = []
        panel.append(dim(fit(model.status, width)))
        panel.append(bold(fit(model.title, width)))
        panel.append(fit(model.artist ?? "", width))
        panel.append(dim(fit(model.album ?? "", width)))
        panel.append("")
        let elapsed = formatTime(model.time)
        let total = model.duration.map(formatTime) ?? "--:--"
        let barWidth = max(4, width - elapsed.count - total.count - 2)
        let fraction = model.duration.map { $0 > 0 ? min(1, max(0, model.time / $0)) : 0 } ?? 0
        let filled = Int((fraction * Double(barWidth)).rounded(.down))
        let bar = accent(String(repeating: "━", count: filled)) + (filled < barWidth ? "╸" : "")
            + dim(String(repeating: "─", count: max(0, barWidth - filled - 1)))
        panel.append("\(elapsed) \(bar) \(total)")
        panel.append(dim(fit(model.modes.joined(separator: " · "), width)))
        panel.append("")
        let room = rows - panel.count - model.messages.count - 2  // the heading and the keys' line
        if !model.upcoming.isEmpty && room > 0 {
            panel.append(bold("Up next"))
            for line in model.upcoming.prefix(room) { panel.append(fit(line, width)) }
        }

        var lines: [String] = []
        let artwork: [String] = if case .lines(let lines)? = model.artwork { lines } else { [] }
        for row in 0..<max(panel.count, box?.rows ?? 0) {
            var line = ""
            if let box {
                switch model.artwork {
                case .pixels?:
                    line += " \u{1B}[\(box.columns)C  "  // over the picture, not into it
                default:
                    line += " " + (row < artwork.count ? artwork[row] + "\u{1B}[0m" : String(repeating: " ", count: box.columns)) + "  "
                }
            } else {
                line += " "
            }
            if row < panel.count { line += panel[row] }
            lines.append(line)
        }
        let footerRows = model.messages.count + 1
        while lines.count < rows - footerRows { lines.append("") }
        lines = Array(lines.prefix(max(0, rows - footerRows)))
        for message in model.messages.suffix(max(0, rows - lines.count - 1)) { lines.append(" " + dim(fit(message, columns - 2))) }
        lines.append(" " + dim(fit(Self.keys.first { $0.count <= columns - 2 } ?? Self.keys.last!, columns - 2)))
        return lines
    }

    /// The keys' line, longest first: the first that fits is shown, so that `q quit` stays on an
    /// 80-column terminal.
    static let keys = [
        "space pause/play  n next  p previous  ←/→ seek 10 s  f/b scan  r repeat  s shuffle  +/- volume  q quit",
        "space pause/play  n next  p previous  ←/→ seek 10 s  f/b scan  r repeat  s shuffle  q quit",
        "space pause  n next  p prev  ←/→ seek  f/b scan  r repeat  s shuffle  q quit",
        "spc pause n/p next/prev ←/→ seek q quit",
        "q quit",
    ]

    private func fit(_ text: String, _ width: Int) -> String { fitted(text, width: width) }
}
