import Foundation
import Glibc
import MusicKit
import MusicKitTerminal

// musickit-workout: the workout app of the talk "Meet MusicKit", for a terminal. It is written
// against MusicKit's public API only: authorization at start, the subscription check and offer,
// a workout screen with a running stopwatch, the music picker, ApplicationMusicPlayer with its
// controls and the current song's artwork, and a shelf of suggested songs made with the talk's
// `fetchSongs` (MusicCatalogResourceRequest with .findEquivalents and `item(for:)`).
// Keys are listed on each screen; q quits.

/// The talk's `fetchSongs`: the featured song and the others, each in this storefront (or its
/// equivalent here).
func fetchSongs(songIDs: [MusicItemID]) async throws -> (featured: Song?, other: [Song]) {
    var request = MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: songIDs)
    request.options = [.findEquivalents]

    let response = try await request.response()

    let featuredSongID = songIDs[0]
    let featuredSong = response.item(for: featuredSongID)

    let others: [Song] = songIDs[1...].compactMap { songID in
        return response.item(for: songID)
    }

    return (featuredSong, others)
}

/// The suggestion shelf's songs (the bundled catalog's; an app would ship its own list).
let suggestedSongIDs: [MusicItemID] = ["1762000013", "1762000001", "1762000017", "1762000009"]

/// The terminal: the alternate screen, keys one by one, and the terminal given back at the end.
final class Terminal: @unchecked Sendable {
    private var saved = termios()

    init() {
        tcgetattr(0, &saved)
        enter()
    }

    /// The app's screen: alternate, cursor hidden, keys unechoed; a read returns after 0.2 s
    /// without a key, so the stopwatch ticks.
    func enter() {
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { bytes in
            bytes[Int(VMIN)] = 0
            bytes[Int(VTIME)] = 2
        }
        tcsetattr(0, TCSANOW, &raw)
        write("\u{1B}[?1049h\u{1B}[?25l")
    }

    /// The terminal as it was (before the picker takes it, and at the end).
    func restore() {
        write("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l")
        tcsetattr(0, TCSANOW, &saved)
    }

    /// The next key, or nil after 0.2 s without one.
    func key() -> Character? {
        var byte: UInt8 = 0
        guard read(0, &byte, 1) == 1 else { return nil }
        return Character(UnicodeScalar(byte))
    }

    func draw(_ lines: [String]) {
        write("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\r\n") + "\u{1B}[J")
    }

    func write(_ text: String) {
        var bytes = Array(text.utf8)
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            bytes.removeFirst(written)
        }
    }
}

@main
struct WorkoutApp {
    static func main() async {
        // 1. Music access.
        let status = await MusicAuthorization.request()
        guard status == .authorized else {
            print("musickit-workout: access to Apple Music is \(status); allow it with `musickit authorize musickit-workout --allow`")
            exit(1)
        }
        // 2. The subscription, and the offer when the person can subscribe.
        var subscription = try? await MusicSubscription.current
        if let current = subscription, current.canBecomeSubscriber {
            _ = try? await MusicSubscriptionOffer.present(options: .default)
            subscription = try? await MusicSubscription.current
        }
        let canPlayCatalog = subscription?.canPlayCatalogContent ?? false

        // 3. The suggestion shelf.
        var shelf: [Song] = []
        if canPlayCatalog, let (featured, others) = try? await fetchSongs(songIDs: suggestedSongIDs) {
            shelf = (featured.map { [$0] } ?? []) + others
        }

        let player = ApplicationMusicPlayer.shared
        let terminal = Terminal()
        defer { terminal.restore() }
        var picked: [Song] = []
        var workoutStart: Date?
        var message = canPlayCatalog ? "" : "No Apple Music subscription: the picker shows your library."

        func play(_ songs: [Song]) async {
            guard !songs.isEmpty else { return }
            player.queue = ApplicationMusicPlayer.Queue(for: songs)
            do { try await player.play() } catch { message = "\(error)" }
        }

        while true {
            if let start = workoutStart {
                terminal.draw(workoutScreen(elapsed: Date().timeIntervalSince(start), player: player, message: message))
            } else {
                terminal.draw(homeScreen(shelf: shelf, picked: picked, message: message))
            }
            guard let key = terminal.key() else { continue }
            message = ""
            switch (workoutStart != nil, key) {
            case (false, "q"), (true, "q"):
                player.stop()
                return
            case (false, "s"):
                workoutStart = Date()
                if player.state.playbackStatus != .playing { await play(picked) }
            case (false, "p"):
                terminal.restore()
                if let selection = try? await MusicPicker(allowsMultipleSelection: true).present() {
                    picked = Array(selection.songs)
                    for album in selection.albums {
                        if let tracks = try? await album.with([.tracks]).tracks {
                            picked += tracks.compactMap { if case .song(let song) = $0 { song } else { nil } }
                        }
                    }
                }
                terminal.enter()
            case (false, let digit) where digit.isNumber:
                // Choosing an artwork of the shelf starts its song at once, and the workout.
                if let index = digit.wholeNumberValue, index >= 1, index <= shelf.count {
                    workoutStart = Date()
                    await play([shelf[index - 1]] + shelf.enumerated().filter { $0.offset != index - 1 }.map(\.element))
                }
            case (true, " "):
                if player.state.playbackStatus == .playing { player.pause() } else { try? await player.play() }
            case (true, "n"): try? await player.skipToNextEntry()
            case (true, "b"): try? await player.skipToPreviousEntry()
            case (true, "e"):
                player.pause()
                workoutStart = nil
                message = "Workout ended."
            default: break
            }
        }
    }

    static func homeScreen(shelf: [Song], picked: [Song], message: String) -> [String] {
        var lines = ["", "  \u{1B}[1mBike workout\u{1B}[22m", ""]
        if !shelf.isEmpty {
            lines.append("  Suggested for your ride (press a number to start it)")
            let art: [[String]] = shelf.prefix(4).map { $0.artwork?.terminalImage(columns: 16, rows: 8) ?? Array(repeating: String(repeating: " ", count: 16), count: 8) }
            for row in 0..<8 { lines.append("  " + art.map { $0[safe: row] ?? String(repeating: " ", count: 16) }.joined(separator: "  ")) }
            lines.append("  " + shelf.prefix(4).enumerated().map { "\($0.offset + 1) " + String($0.element.title.prefix(14)).padding(toLength: 16, withPad: " ", startingAt: 0) }.joined())
            lines.append("")
        }
        lines.append("  Picked: " + (picked.isEmpty ? "nothing yet" : picked.prefix(3).map(\.title).joined(separator: ", ") + (picked.count > 3 ? " and \(picked.count - 3) more" : "")))
        lines.append("")
        lines.append("  s start workout · p pick music · 1-\(min(4, shelf.count)) play a suggestion · q quit")
        if !message.isEmpty { lines.append("  " + message) }
        return lines
    }

    static func workoutScreen(elapsed: TimeInterval, player: ApplicationMusicPlayer, message: String) -> [String] {
        let seconds = Int(elapsed)
        var lines = ["", "  \u{1B}[1mBike workout\u{1B}[22m   " + String(format: "%02d:%02d", seconds / 60, seconds % 60), ""]
        let entry = player.queue.currentEntry
        let artwork = entry?.artwork?.terminalImage(columns: 40, rows: 20) ?? []
        lines += artwork.map { "  " + $0 }
        if let entry {
            lines.append("")
            lines.append("  \u{1B}[1m\(entry.title)\u{1B}[22m")
            if let subtitle = entry.subtitle { lines.append("  \(subtitle)") }
        } else {
            lines.append("  No music: pick some on the home screen.")
        }
        lines.append("  " + (player.state.playbackStatus == .playing ? "Playing" : "Paused"))
        lines.append("")
        lines.append("  space play/pause · b back · n next · e end workout · q quit")
        if !message.isEmpty { lines.append("  " + message) }
        return lines
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
