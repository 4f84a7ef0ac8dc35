import PlatformSupport
import Foundation
import Glibc
import MusicKitCore
import Synchronization

/// A music picker for terminal apps: the Linux counterpart of SwiftUI's `musicPicker` modifier,
/// in the spirit of `MusicSubscriptionOffer.present(options:)`. One full screen on the terminal
/// (`/dev/tty`) searches the catalog and the library as the person types (Catalog and Library
/// tabs; the library only, without a subscription), moves with the arrows or j/k, selects one or
/// many (space), opens an album or playlist to pick from its tracks ("a" adds them all), shows
/// artwork thumbnails, and hands back what was chosen. (Linux addition)
public struct MusicPicker: Sendable {
    /// What was chosen: songs (tracks picked one by one or added with "add all"), and albums and
    /// playlists selected as a whole. (Linux addition)
    public struct Selection: Sendable, Equatable, Hashable {
        public var songs: MusicItemCollection<Song>
        public var albums: MusicItemCollection<Album>
        public var playlists: MusicItemCollection<Playlist>

        public init(songs: MusicItemCollection<Song> = [], albums: MusicItemCollection<Album> = [],
                    playlists: MusicItemCollection<Playlist> = []) {
            self.songs = songs
            self.albums = albums
            self.playlists = playlists
        }

        public var isEmpty: Bool { songs.isEmpty && albums.isEmpty && playlists.isEmpty }
    }

    /// Why the picker could not be shown. (Linux addition)
    public enum PickerError: Error, Equatable, Sendable, CustomStringConvertible {
        case noTerminal
        public var description: String { "no terminal to present the music picker on" }
    }

    /// Whether several items can be chosen (space toggles, enter finishes).
    public var allowsMultipleSelection: Bool
    /// What the search field holds when the picker opens.
    public var searchTerm: String

    public init(allowsMultipleSelection: Bool = false, searchTerm: String = "") {
        self.allowsMultipleSelection = allowsMultipleSelection
        self.searchTerm = searchTerm
    }

    /// Shows the picker until the person chooses (the selection) or cancels with Esc (nil).
    public func present() async throws -> Selection? {
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0, TerminalScreen.canShow(on: descriptor) else {
            if descriptor >= 0 { close(descriptor) }
            throw PickerError.noTerminal
        }
        defer { close(descriptor) }
        let catalogAvailable = (try? await MusicSubscription.current)?.canPlayCatalogContent ?? false
        let session = PickerSession(picker: self, screen: TerminalScreen(input: descriptor, output: descriptor),
                                    catalogAvailable: catalogAvailable)
        return await session.run()
    }
}

/// One showing of the picker: its state, the keys, the searches and the drawing.
private final class PickerSession: @unchecked Sendable {
    // @unchecked: the state is in a Mutex; everything else is fixed at init.
    enum Tab: Equatable { case catalog, library }
    enum Item: Equatable {
        case song(Song)
        case album(Album)
        case playlist(Playlist)

        var artwork: Artwork? {
            switch self {
            case .song(let song): song.artwork
            case .album(let album): album.artwork
            case .playlist(let playlist): playlist.artwork
            }
        }
    }

    /// An album's or playlist's page: its tracks.
    struct Detail {
        let container: Item
        let title: String
        var songs: [Song]
        var cursor = 0
    }

    struct State {
        var tab: Tab
        var term: String
        var searchFocused = true
        var sections: [(title: String, items: [Item])] = []
        var cursor = 0
        var chosen: [Item] = []
        var details: [Detail] = []
        var message: String?
        var searchGeneration = 0
        var finished: MusicPicker.Selection??  // .some(nil): cancelled
    }

    private let picker: MusicPicker
    private let screen: TerminalScreen
    private let catalogAvailable: Bool
    private let state: Mutex<State>
    private let thumbnails = Mutex<[Artwork: String]>([:])
    private let done = AsyncStream<Void>.makeStream()

    init(picker: MusicPicker, screen: TerminalScreen, catalogAvailable: Bool) {
        self.picker = picker
        self.screen = screen
        self.catalogAvailable = catalogAvailable
        state = Mutex(State(tab: catalogAvailable ? .catalog : .library, term: picker.searchTerm))
    }

    func run() async -> MusicPicker.Selection? {
        screen.enter(rawKeys: true)
        defer { screen.leave() }
        search()
        draw()
        let readerEnded = DispatchSemaphore(value: 0)
        PlatformThread.detached(name: "musickit.picker-keys") { [self] in
            readKeys()
            readerEnded.signal()
        }
        for await _ in done.stream { break }
        // The reader ends within 50 ms of the end (it looks at `finished` between keys): waiting
        // for it means nothing of the picker reads the terminal after `present()` returns.
        readerEnded.wait()
        return state.withLock { $0.finished ?? nil }
    }

    // MARK: Keys

    enum Key: Equatable { case character(Character), up, down, left, right, enter, backspace, tab, escape, clearLine }

    private func readKeys() {
        var byte: UInt8 = 0
        var pending: [UInt8] = []
        while state.withLock({ $0.finished == nil }) {
            var ready = pollfd(fd: screen.input, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }  // look at `finished` again every 50 ms
            guard read(screen.input, &byte, 1) == 1 else { finish(nil); return }
            switch byte {
            case 0x1B:
                // An arrow is ESC [ A…D; ESC alone is Esc (nothing follows within 30 ms).
                var poller = pollfd(fd: screen.input, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 30) > 0, read(screen.input, &byte, 1) == 1, byte == 0x5B || byte == 0x4F,
                   read(screen.input, &byte, 1) == 1 {
                    switch byte {
                    case 0x41: handle(.up)
                    case 0x42: handle(.down)
                    case 0x43: handle(.right)
                    case 0x44: handle(.left)
                    default: break
                    }
                } else {
                    handle(.escape)
                }
            case 0x0D, 0x0A: handle(.enter)
            case 0x7F, 0x08: handle(.backspace)
            case 0x09: handle(.tab)
            case 0x15: handle(.clearLine)  // Ctrl-U
            case 0x0E: handle(.down)       // Ctrl-N
            case 0x10: handle(.up)         // Ctrl-P
            case 0x03: finish(nil)         // Ctrl-C
            default:
                pending.append(byte)
                if let text = String(validating: pending, as: UTF8.self) {
                    pending.removeAll()
                    for character in text where !character.isASCII || character.asciiValue! >= 0x20 { handle(.character(character)) }
                } else if pending.count >= 4 {
                    pending.removeAll()
                }
            }
        }
    }

    private func handle(_ key: Key) {
        var searchAgain = false
        var finishWith: MusicPicker.Selection??
        var loadDetail: Item?
        state.withLock { state in
            state.message = nil
            if !state.details.isEmpty {
                var detail = state.details.removeLast()
                switch key {
                case .down, .character("j"): detail.cursor = min(detail.cursor + 1, max(0, detail.songs.count - 1))
                case .up, .character("k"): detail.cursor = max(0, detail.cursor - 1)
                case .escape, .left, .backspace:
                    return  // back to the results (the page is dropped)
                case .character("a"):
                    if picker.allowsMultipleSelection {
                        for song in detail.songs where !state.chosen.contains(.song(song)) { state.chosen.append(.song(song)) }
                        state.message = "added all \(detail.songs.count) tracks of “\(detail.title)”"
                    } else {
                        finishWith = .some(Self.selection([detail.container]))
                    }
                case .character(" "):
                    if let song = detail.songs[safe: detail.cursor] {
                        if picker.allowsMultipleSelection { Self.toggle(.song(song), in: &state.chosen) } else { finishWith = .some(Self.selection([.song(song)])) }
                    }
                case .enter:
                    if picker.allowsMultipleSelection && !state.chosen.isEmpty {
                        finishWith = .some(Self.selection(state.chosen))
                    } else if let song = detail.songs[safe: detail.cursor] {
                        finishWith = .some(Self.selection([.song(song)]))
                    }
                default: break
                }
                state.details.append(detail)
                return
            }
            let items = state.sections.flatMap(\.items)
            if state.searchFocused {
                switch key {
                case .character(let character):
                    state.term.append(character)
                    searchAgain = true
                case .backspace:
                    if !state.term.isEmpty { state.term.removeLast(); searchAgain = true }
                case .clearLine:
                    state.term = ""
                    searchAgain = true
                case .down, .enter:
                    if !items.isEmpty { state.searchFocused = false; state.cursor = 0 }
                case .tab:
                    searchAgain = switchTab(&state)
                case .escape:
                    finishWith = .some(nil)
                default: break
                }
                return
            }
            switch key {
            case .down, .character("j"): state.cursor = min(state.cursor + 1, max(0, items.count - 1))
            case .up, .character("k"):
                if state.cursor == 0 { state.searchFocused = true } else { state.cursor -= 1 }
            case .character("/"): state.searchFocused = true
            case .tab: searchAgain = switchTab(&state)
            case .escape: finishWith = .some(nil)
            case .character(" "):
                guard let item = items[safe: state.cursor] else { break }
                if picker.allowsMultipleSelection { Self.toggle(item, in: &state.chosen) } else { finishWith = .some(Self.selection([item])) }
            case .enter, .right:
                guard let item = items[safe: state.cursor] else { break }
                switch item {
                case .song:
                    guard key == .enter else { break }
                    finishWith = .some(Self.selection(picker.allowsMultipleSelection && !state.chosen.isEmpty ? state.chosen : [item]))
                case .album, .playlist:
                    loadDetail = item
                }
            case .backspace:
                state.searchFocused = true
                if !state.term.isEmpty { state.term.removeLast(); searchAgain = true }
            case .character(let character):
                state.searchFocused = true  // typing goes to the search
                state.term.append(character)
                searchAgain = true
            default: break
            }
        }
        if let finishWith { finish(finishWith) ; return }
        if searchAgain { search() }
        if let loadDetail { openDetail(loadDetail) }
        draw()
    }

    private func switchTab(_ state: inout State) -> Bool {
        guard catalogAvailable else {
            state.message = "the catalog needs an Apple Music subscription: the library only"
            return false
        }
        state.tab = state.tab == .catalog ? .library : .catalog
        state.cursor = 0
        return true
    }

    private static func toggle(_ item: Item, in chosen: inout [Item]) {
        if let index = chosen.firstIndex(of: item) { chosen.remove(at: index) } else { chosen.append(item) }
    }

    private static func selection(_ items: [Item]) -> MusicPicker.Selection {
        var songs: [Song] = []
        var albums: [Album] = []
        var playlists: [Playlist] = []
        for item in items {
            switch item {
            case .song(let song): songs.append(song)
            case .album(let album): albums.append(album)
            case .playlist(let playlist): playlists.append(playlist)
            }
        }
        return MusicPicker.Selection(songs: MusicItemCollection(songs), albums: MusicItemCollection(albums),
                                     playlists: MusicItemCollection(playlists))
    }

    private func finish(_ selection: MusicPicker.Selection??) {
        let first = state.withLock { state -> Bool in
            guard state.finished == nil else { return false }
            state.finished = .some(selection ?? nil)
            return true
        }
        if first { done.continuation.yield(()); done.continuation.finish() }
    }

    // MARK: Searching

    /// Searches for the term in the tab's source; an answer that a newer search overtook is dropped.
    private func search() {
        let (term, tab, generation) = state.withLock { state -> (String, Tab, Int) in
            state.searchGeneration += 1
            return (state.term, state.tab, state.searchGeneration)
        }
        Task { [self] in
            var sections: [(String, [Item])] = []
            var message: String?
            if !term.trimmingCharacters(in: .whitespaces).isEmpty {
                do {
                    let found: (songs: MusicItemCollection<Song>, albums: MusicItemCollection<Album>,
                                playlists: MusicItemCollection<Playlist>)
                    if tab == .catalog {
                        var request = MusicCatalogSearchRequest(term: term, types: [Song.self, Album.self, Playlist.self])
                        request.limit = 12
                        let response = try await request.response()
                        found = (response.songs, response.albums, response.playlists)
                    } else {
                        var request = MusicLibrarySearchRequest(term: term, types: [Song.self, Album.self, Playlist.self])
                        request.limit = 12
                        let response = try await request.response()
                        found = (response.songs, response.albums, response.playlists)
                    }
                    sections = [("Songs", found.songs.map(Item.song)), ("Albums", found.albums.map(Item.album)),
                                ("Playlists", found.playlists.map(Item.playlist))]
                } catch {
                    message = "\(error)"
                }
            }
            let current = state.withLock { state -> Bool in
                guard state.searchGeneration == generation else { return false }
                state.sections = sections.filter { !$0.1.isEmpty }.map { (title: $0.0, items: $0.1) }
                state.cursor = min(state.cursor, max(0, state.sections.flatMap(\.items).count - 1))
                if let message { state.message = message }
                return true
            }
            if current { draw() }
        }
    }

    /// Opens an album's or a playlist's page with its tracks.
    private func openDetail(_ item: Item) {
        Task { [self] in
            var songs: [Song] = []
            var title = ""
            do {
                switch item {
                case .album(let album):
                    title = album.title
                    songs = try await album.with([.tracks]).tracks?.compactMap { if case .song(let song) = $0 { song } else { nil } } ?? []
                case .playlist(let playlist):
                    title = playlist.name
                    songs = try await playlist.with([.tracks]).tracks?.compactMap { if case .song(let song) = $0 { song } else { nil } } ?? []
                case .song:
                    return
                }
            } catch {
                state.withLock { $0.message = "“\(title)”: \(error)" }
                draw()
                return
            }
            state.withLock { $0.details.append(Detail(container: item, title: title, songs: songs)) }
            draw()
        }
    }

    // MARK: Drawing

    /// Held from reading the state to writing the frame, so that frames reach the terminal in the
    /// order of the states they show (keys and searches draw from different threads).
    private let drawing = NSLock()

    private func draw() {
        drawing.lock()
        defer { drawing.unlock() }
        let (columns, rows) = screen.size
        let state = state.withLock { $0 }
        var lines: [String] = []
        let multiple = picker.allowsMultipleSelection
        let catalogTab = catalogAvailable ? (state.tab == .catalog ? "\u{1B}[7m Catalog \u{1B}[27m" : " Catalog ")
            : "\u{1B}[2m Catalog (subscription) \u{1B}[22m"
        let libraryTab = state.tab == .library ? "\u{1B}[7m Library \u{1B}[27m" : " Library "
        lines.append(" \u{1B}[1mPick music\u{1B}[22m   " + catalogTab + "│" + libraryTab)
        let cursorMark = state.searchFocused && state.details.isEmpty ? "▏" : ""
        lines.append(" Search: " + fitted(state.term, width: columns - 12) + cursorMark)
        lines.append(" " + String(repeating: "─", count: max(0, columns - 2)))
        let listRows = max(1, rows - lines.count - 3)
        if let detail = state.details.last {
            lines.append(" \u{1B}[1m" + fitted(detail.title, width: columns - 4) + "\u{1B}[22m  (\(detail.songs.count) tracks)")
            let start = max(0, min(detail.cursor - listRows / 2, detail.songs.count - listRows + 1))
            for (index, song) in detail.songs.enumerated().dropFirst(start).prefix(listRows - 1) {
                lines.append(row(.song(song), selected: index == detail.cursor, chosen: state.chosen.contains(.song(song)),
                                 multiple: multiple, columns: columns))
            }
        } else if state.sections.isEmpty {
            lines.append(state.term.trimmingCharacters(in: .whitespaces).isEmpty
                         ? " \u{1B}[2mType to search the \(state.tab == .catalog ? "catalog" : "library").\u{1B}[22m"
                         : " \u{1B}[2mNothing found for “\(fitted(state.term, width: columns - 24))”.\u{1B}[22m")
        } else {
            var rendered: [(line: String, itemIndex: Int?)] = []
            var index = 0
            for section in state.sections {
                rendered.append((" \u{1B}[1m\(section.title)\u{1B}[22m", nil))
                for item in section.items {
                    rendered.append((row(item, selected: !state.searchFocused && index == state.cursor,
                                         chosen: state.chosen.contains(item), multiple: multiple, columns: columns), index))
                    index += 1
                }
            }
            let cursorLine = rendered.firstIndex { $0.itemIndex == state.cursor } ?? 0
            let start = max(0, min(cursorLine - listRows / 2, rendered.count - listRows))
            lines += rendered.dropFirst(start).prefix(listRows).map(\.line)
        }
        while lines.count < rows - 2 { lines.append("") }
        lines = Array(lines.prefix(rows - 2))
        lines.append(" " + fitted(state.message ?? (multiple ? "\(state.chosen.count) selected" : ""), width: columns - 2))
        let keys = state.details.isEmpty
            ? (multiple ? "↑/↓ j/k move · space select · enter open/done · tab catalog/library · / search · esc cancel"
                        : "↑/↓ j/k move · enter pick/open · tab catalog/library · / search · esc cancel")
            : (multiple ? "space select · a add all · enter done · esc back" : "enter pick · a the whole \(state.details.last.map { if case .album = $0.container { "album" } else { "playlist" } } ?? "") · esc back")
        lines.append(" \u{1B}[2m" + fitted(keys, width: columns - 2) + "\u{1B}[22m")
        screen.draw(lines)
    }

    /// One result: cursor, selection mark, thumbnail, title and what it is.
    private func row(_ item: Item, selected: Bool, chosen: Bool, multiple: Bool, columns: Int) -> String {
        let text: String
        switch item {
        case .song(let song):
            text = "\(song.title) — \(song.artistName)" + (song.albumTitle.map { " · \($0)" } ?? "")
                + (song.duration.map { "  " + formatTime($0) } ?? "")
        case .album(let album):
            text = "\(album.title) — \(album.artistName) · \(album.trackCount) tracks  ›"
        case .playlist(let playlist):
            text = "\(playlist.name)" + (playlist.curatorName.map { " — \($0)" } ?? "") + "  ›"
        }
        let mark = multiple ? (chosen ? "✓ " : "  ") : ""
        let line = (selected ? "▸ " : "  ") + mark + thumbnail(item.artwork) + " " + fitted(text, width: columns - 10)
        return selected ? " \u{1B}[7m" + line + "\u{1B}[27m" : " " + line
    }

    /// The artwork as two cells of block symbols (made once per artwork).
    private func thumbnail(_ artwork: Artwork?) -> String {
        guard let artwork else { return "  " }
        if let made = thumbnails.withLock({ $0[artwork] }) { return made }
        let made = artwork.terminalImage(columns: 2, rows: 1)?.first ?? "  "
        thumbnails.withLock { $0[artwork] = made }
        return made
    }
}

private extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
