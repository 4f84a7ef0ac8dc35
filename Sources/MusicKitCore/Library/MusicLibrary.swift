import Foundation
import Synchronization

/// Where the person's music files are: `<config>/library.json`, `~/Music` until set.
struct LibrarySettings: Codable, Equatable, Sendable {
    var folders: [String]

    static func file(_ environment: MusicKitEnvironment) -> SettingsFile<LibrarySettings> {
        SettingsFile(url: environment.configDirectory.appendingPathComponent("library.json"))
    }

    static func defaults() -> LibrarySettings {
        let home = ProcessEnvironment["HOME"] ?? NSHomeDirectory()
        return LibrarySettings(folders: [URL(fileURLWithPath: home).appendingPathComponent("Music").path])
    }
}

/// The library service of an environment: the store behind a mutex, and the library items built
/// from it, cached until the library changes (in this process or another).
final class MusicLibraryService: Sendable {
    let environment: MusicKitEnvironment
    private let store: Mutex<LibraryStore>
    let problem: SettingsFileError?

    private struct Cache {
        var generation = -1
        var byType: [String: [ResourceObject]] = [:]
        var indexed: [String: [IndexedResource]] = [:]
    }

    /// A library resource with its text attributes folded (case and accents removed) once,
    /// so filters compare plain strings.
    struct IndexedResource: Sendable {
        let resource: ResourceObject
        let folded: [String: String]

        static let textKeys = ["name", "artistName", "albumName", "composerName", LibraryAttributes.albumArtist]

        init(_ resource: ResourceObject) {
            self.resource = resource
            var folded: [String: String] = [:]
            for key in IndexedResource.textKeys {
                if let text = resource.string(key) { folded[key] = IndexedResource.fold(text) }
            }
            self.folded = folded
        }

        static func fold(_ text: String) -> String { text.foldedForSearch }

        /// Whether folded `haystack` contains folded `needle`, compared as UTF-8 bytes (the hot
        /// loop of text filters; String.contains goes through Foundation and is many times slower).
        static func contains(_ haystack: String, _ needle: String) -> Bool {
            if needle.isEmpty { return true }
            var haystack = haystack
            var needle = needle
            return haystack.withUTF8 { outer in
                needle.withUTF8 { inner in
                    guard inner.count <= outer.count else { return false }
                    let first = inner[0]
                    var start = 0
                    while start <= outer.count - inner.count {
                        if outer[start] == first {
                            var offset = 1
                            while offset < inner.count && outer[start + offset] == inner[offset] { offset += 1 }
                            if offset == inner.count { return true }
                        }
                        start += 1
                    }
                    return false
                }
            }
        }
    }

    /// The items of `type` with their folded text, cached like `items(_:)`.
    func indexedItems(_ type: String) throws -> [IndexedResource] {
        let resources = try items(type)
        let current = try generation()
        if let cached = cache.withLock({ $0.generation == current ? $0.indexed[type] : nil }) { return cached }
        let indexed = resources.map(IndexedResource.init)
        cache.withLock { cache in
            if cache.generation == current { cache.indexed[type] = indexed }
        }
        return indexed
    }
    private let cache = Mutex(Cache())

    private static let services = Mutex<[URL: MusicLibraryService]>([:])

    static func open(_ environment: MusicKitEnvironment = .current) throws -> MusicLibraryService {
        try services.withLock { services in
            if let service = services[environment.dataDirectory], service.environment == environment { return service }
            let service = try MusicLibraryService(environment: environment)
            services[environment.dataDirectory] = service
            return service
        }
    }

    static func reset() { services.withLock { $0.removeAll() } }

    init(environment: MusicKitEnvironment) throws {
        self.environment = environment
        let store = try LibraryStore(path: environment.dataDirectory.appendingPathComponent("library.sqlite"))
        problem = store.problem
        self.store = Mutex(store)
    }

    func withStore<T>(_ body: (LibraryStore) throws -> T) throws -> T {
        try store.withLock { try body($0) }
    }

    /// A write: done in the store, then everyone's cache is stale.
    func write<T>(_ body: (LibraryStore) throws -> T) throws -> T {
        try withStore { store in
            let value = try body(store)
            try store.database.execute("INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE SET value = value + 1")
            return value
        }
    }

    private func generation() throws -> Int {
        try withStore { try $0.database.statement("SELECT value FROM meta WHERE key = 'generation'").rows { $0.int(0) }.first ?? 0 }
    }

    /// The library's items of `type` ("songs", "albums", "artists", "genres", "playlists").
    func items(_ type: String) throws -> [ResourceObject] {
        let current = try generation()
        if let cached = cache.withLock({ $0.generation == current ? $0.byType[type] : nil }) { return cached }
        let built: [ResourceObject]
        switch type {
        case "songs": built = try withStore { try $0.songs() }
        case "playlists": built = try withStore { try $0.playlists() }
        case "albums": built = try albums()
        case "artists": built = try artists()
        case "genres": built = try genres()
        case "music-videos": built = try withStore { try $0.catalogItems(type: "music-videos") }
        case "tracks": built = try items("songs") + items("music-videos")
        default: built = []
        }
        cache.withLock { cache in
            if cache.generation != current { cache = Cache(generation: current) }
            cache.byType[type] = built
        }
        return built
    }

    /// Albums: one per (album, album artist) of the songs — the album artist a file names (a
    /// compilation's "Various Artists"), else the song's artist — then catalog albums added whole.
    /// An album's songs are in disc, then track order.
    private func albums() throws -> [ResourceObject] {
        var order: [String] = []
        var byKey: [String: (name: String, artist: String, songs: [ResourceObject])] = [:]
        for song in try items("songs") {
            guard let (key, album, artist) = LibraryAttributes.albumKey(of: song) else { continue }
            if byKey[key] == nil { order.append(key); byKey[key] = (album, artist, []) }
            byKey[key]!.songs.append(song)
        }
        let built = order.map { key -> ResourceObject in
            let entry = byKey[key]!
            let songs = entry.songs.sorted {
                ($0.int("discNumber") ?? 1, $0.int("trackNumber") ?? 0) < ($1.int("discNumber") ?? 1, $1.int("trackNumber") ?? 0)
            }
            let id = LibraryStore.id(prefix: "l.", key)
            var attributes: [String: JSONValue] = ["name": .string(entry.name), "artistName": .string(entry.artist),
                                                   "trackCount": .number(Double(songs.count)),
                                                   "playParams": .object(["id": .string(id), "kind": .string("album"), "isLibrary": .bool(true)])]
            attributes["genreNames"] = songs.first?.attributes["genreNames"]
            attributes["dateAdded"] = songs.compactMap { $0.string("dateAdded") }.min().map(JSONValue.string)
            attributes["releaseDate"] = songs.first?.attributes["releaseDate"]
            attributes["artwork"] = songs.first?.attributes["artwork"]
            return ResourceObject(id: id, type: "library-albums", href: "/v1/me/library/albums/\(id)", attributes: attributes,
                                  relationships: ["tracks": .init(data: songs)])
        }
        return built + (try withStore { try $0.catalogItems(type: "albums") })
    }

    private func artists() throws -> [ResourceObject] {
        var order: [String] = []
        var albums: [String: Set<String>] = [:]
        var added: [String: String] = [:]
        // An artist's genres: those of its songs, most songs first (as Apple's artists list theirs).
        var genres: [String: [String: Int]] = [:]
        for song in try items("songs") {
            guard let artist = song.string("artistName") else { continue }
            if albums[artist] == nil { order.append(artist); albums[artist] = [] }
            if let album = song.string("albumName") { albums[artist]!.insert(album) }
            if let date = song.string("dateAdded") { added[artist] = min(added[artist] ?? date, date) }
            for genre in song.strings("genreNames") ?? [] where !genre.isEmpty { genres[artist, default: [:]][genre, default: 0] += 1 }
        }
        return order.map { name in
            let id = LibraryStore.id(prefix: "r.", name)
            var attributes: [String: JSONValue] = ["name": .string(name), "albumCount": .number(Double(albums[name]?.count ?? 0))]
            attributes["dateAdded"] = added[name].map(JSONValue.string)
            if let counts = genres[name] {
                let ordered = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map(\.key)
                attributes["genreNames"] = .array(ordered.map(JSONValue.string))
            }
            return ResourceObject(id: id, type: "library-artists", href: "/v1/me/library/artists/\(id)", attributes: attributes)
        }
    }

    private func genres() throws -> [ResourceObject] {
        var seen: [String] = []
        for song in try items("songs") {
            for genre in song.strings("genreNames") ?? [] where !seen.contains(genre) { seen.append(genre) }
        }
        return seen.map { name in
            let id = LibraryStore.id(prefix: "g.", name)
            return ResourceObject(id: id, type: "library-genres", href: "/v1/me/library/genres/\(id)", attributes: ["name": .string(name)])
        }
    }

    var settings: LibrarySettings {
        var problem: SettingsFileError?
        return LibrarySettings.file(environment).read(fallback: .defaults(), problem: &problem)
    }
}

/// The person's music library: files scanned from their folders, catalog items they added,
/// and their playlists.
public final class MusicLibrary: Sendable {
    public static let shared = MusicLibrary()

    private init() {}

    public enum Error: String, Swift.Error, Equatable, Hashable, Sendable, CustomStringConvertible, LocalizedError {
        case addToPlaylistFailed
        case createPlaylistFailed
        case editPlaylistFailed
        case itemAlreadyAdded
        case permissionDenied
        case playlistNotInLibrary
        case unableToAddItem
        case unknown

        public var description: String { errorDescription ?? rawValue }
        public var errorDescription: String? {
            switch self {
            case .addToPlaylistFailed: "The item could not be added to the playlist."
            case .createPlaylistFailed: "The playlist could not be created."
            case .editPlaylistFailed: "The playlist could not be changed."
            case .itemAlreadyAdded: "The item is already in the library."
            case .permissionDenied: "This app is not authorized to access the music library."
            case .playlistNotInLibrary: "The playlist is not in the library."
            case .unableToAddItem: "The item could not be added to the library."
            case .unknown: "The library could not be changed."
            }
        }
        public var failureReason: String? {
            self == .permissionDenied ? "MusicAuthorization.currentStatus is not .authorized" : nil
        }
        public var recoverySuggestion: String? {
            self == .permissionDenied ? "Call MusicAuthorization.request(), or run `musickit authorize APP --allow`." : nil
        }
        public var helpAnchor: String? { nil }
    }

    static func authorizedService() throws -> MusicLibraryService {
        guard MusicAuthorization.currentStatus == .authorized else { throw Error.permissionDenied }
        return try MusicLibraryService.open()
    }

    /// Adds a catalog item (song, album, playlist) to the library.
    public func add<MusicItemType: MusicLibraryAddable>(_ item: MusicItemType) async throws {
        let service = try Self.authorizedService()
        guard let resource = Self.resource(of: item), !resource.type.hasPrefix("library-") else {
            throw Error.itemAlreadyAdded
        }
        let added = try service.write { try $0.addCatalogItem(resource) }
        if !added { throw Error.itemAlreadyAdded }
    }

    /// What a playlist gets for `resource`: the song or video itself, or an album's or a
    /// playlist's tracks, in order (Apple's `Album` and `Playlist` are `MusicPlaylistAddable`).
    private static func playlistEntries(for resource: ResourceObject) throws -> [ResourceObject] {
        guard ["albums", "playlists", "library-albums", "library-playlists"].contains(resource.type) else { return [resource] }
        let tracks = PlaybackServices.tracks(of: resource)
        do {
            return try tracks.tracks(0..<tracks.count)
        } catch {
            throw Error.addToPlaylistFailed
        }
    }

    /// The resource an item is: a song's, an album's, or what a track or a playlist's entry holds.
    private static func resource(of item: some MusicItem) -> ResourceObject? {
        if let backed = item as? any ResourceBackedItem { return backed.resource }
        return (item as? any _MusicResourceReading)?._resource.object
    }

    /// Adds `item` to a library playlist and returns the playlist as it is now.
    @discardableResult
    public func add<MusicItemType: MusicPlaylistAddable>(_ item: MusicItemType, to playlist: Playlist) async throws -> Playlist {
        let service = try Self.authorizedService()
        guard let resource = Self.resource(of: item) else { throw Error.addToPlaylistFailed }
        let entries = try Self.playlistEntries(for: resource)
        guard try service.write({ try $0.appendToPlaylist(id: playlist.id.rawValue, entries) }) else {
            throw Error.playlistNotInLibrary
        }
        return try Self.playlist(playlist.id, service)
    }

    @discardableResult
    public func createPlaylist(name: String, description: String? = nil, authorDisplayName: String? = nil) async throws -> Playlist {
        try await createPlaylist(name: name, description: description, authorDisplayName: authorDisplayName, items: [Song]())
    }

    @discardableResult
    public func createPlaylist<S: Sequence, MusicPlaylistAddableType: MusicPlaylistAddable>(
        name: String, description: String? = nil, authorDisplayName: String? = nil, items: S
    ) async throws -> Playlist where S.Element == MusicPlaylistAddableType {
        let service = try Self.authorizedService()
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { throw Error.createPlaylistFailed }
        let resources = try items.compactMap { Self.resource(of: $0) }.flatMap(Self.playlistEntries(for:))
        let id = try service.write {
            try $0.createPlaylist(name: name, description: description, author: authorDisplayName, entries: resources)
        }
        return try Self.playlist(MusicItemID(id), service)
    }

    @discardableResult
    public func edit(_ playlist: Playlist, name: String? = nil, description: String? = nil,
                     authorDisplayName: String? = nil) async throws -> Playlist {
        let service = try Self.authorizedService()
        guard try service.write({ try $0.editPlaylist(id: playlist.id.rawValue, name: name, description: description,
                                                      author: authorDisplayName, entries: nil) }) else {
            throw Error.playlistNotInLibrary
        }
        return try Self.playlist(playlist.id, service)
    }

    @discardableResult
    public func edit<S: Sequence, MusicPlaylistAddableType: MusicPlaylistAddable>(
        _ playlist: Playlist, name: String? = nil, description: String? = nil, authorDisplayName: String? = nil, items: S
    ) async throws -> Playlist where S.Element == MusicPlaylistAddableType {
        let service = try Self.authorizedService()
        let resources = try items.compactMap { Self.resource(of: $0) }.flatMap(Self.playlistEntries(for:))
        guard try service.write({ try $0.editPlaylist(id: playlist.id.rawValue, name: name, description: description,
                                                      author: authorDisplayName, entries: resources) }) else {
            throw Error.playlistNotInLibrary
        }
        return try Self.playlist(playlist.id, service)
    }

    private static func playlist(_ id: MusicItemID, _ service: MusicLibraryService) throws -> Playlist {
        guard let resource = try service.items("playlists").first(where: { $0.id == id.rawValue }) else {
            throw Error.playlistNotInLibrary
        }
        return Playlist(resource: resource)
    }
}

/// Library scanning and settings: the Linux side of the library (on Apple platforms, the Music
/// app keeps it). Not part of Apple's API.
/// (Linux addition)
public enum MusicLibraryScanner {
    /// The folders the library is scanned from (`~/Music` until set).
    public static var folders: [URL] {
        (try? MusicLibraryService.open())?.settings.folders.map { URL(fileURLWithPath: $0) }
            ?? LibrarySettings.defaults().folders.map { URL(fileURLWithPath: $0) }
    }

    /// Sets the folders to scan (persisted).
    public static func setFolders(_ folders: [URL], environment: MusicKitEnvironment = .current) throws {
        try LibrarySettings.file(environment).write(LibrarySettings(folders: folders.map(\.standardizedFileURL.path)))
    }

    /// Scans the folders: new and changed files are read (tags and covers through libsndfile
    /// or FFmpeg, the decoder the file's content calls for; a folder's `cover.jpg` and the like for files without one), unchanged ones
    /// only looked at, vanished ones removed. Unreadable files are listed with the reason.
    public static func scan(progress: (@Sendable (LibraryScanProgress) -> Void)? = nil) throws -> LibraryScanResult {
        let service = try MusicLibrary.authorizedService()
        let folders = service.settings.folders.map { URL(fileURLWithPath: $0) }
        let artwork = LibraryArtwork.directory(service.environment)
        return try service.write { try $0.scan(folders: folders, artworkDirectory: artwork, progress: progress) }
    }

    /// What `measureLoudness` did (Linux addition).
    public struct LoudnessPass: Sendable, Equatable {
        /// Songs measured now, measured before, and not measured because their tags give it.
        public var measured = 0, known = 0, tagged = 0
        /// Files that could not be measured, with the reason.
        public var failed: [String] = []
    }

    /// Measures the loudness (EBU R128) of every library song whose file has no ReplayGain tags
    /// and was not measured yet, so that Sound Check plays it normalized from its first play
    /// (otherwise a song is measured in the background the first time it is queued). The songs
    /// of an album (one album and album artist, two songs or more) are measured together, so
    /// that album gain plays the album at its own loudness, not each song at the reference.
    /// Decodes each file whole (its rate: Benchmarks/RESULTS.md, "Sound Check"): `progress` gets
    /// (songs done, total).
    /// (Linux addition)
    public static func measureLoudness(progress: (@Sendable (Int, Int) -> Void)? = nil) throws -> LoudnessPass {
        let service = try MusicLibrary.authorizedService()
        // The files, a group per album (in the order of its first song) or per song without one.
        var groups: [[String]] = []
        var groupOfAlbum: [String: Int] = [:]
        for song in try service.withStore({ try $0.songs() }) {
            guard let path = song.string("filePath") else { continue }
            guard let key = LibraryAttributes.albumKey(of: song)?.key else { groups.append([path]); continue }
            if let index = groupOfAlbum[key] {
                groups[index].append(path)
            } else {
                groupOfAlbum[key] = groups.count
                groups.append([path])
            }
        }
        guard let store = LoudnessStore.open(service.environment) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: service.environment.dataDirectory.path])
        }
        let total = groups.reduce(0) { $0 + $1.count }
        var pass = LoudnessPass()
        var done = 0
        for group in groups {
            progress?(done, total)
            let outcomes = group.count > 1 ? store.measureAlbumNow(group) : group.map(store.measureNow)
            for outcome in outcomes {
                switch outcome {
                case .measured: pass.measured += 1
                case .known: pass.known += 1
                case .tagged: pass.tagged += 1
                case .failed(let reason): pass.failed.append(reason)
                }
            }
            done += group.count
        }
        progress?(total, total)
        return pass
    }

    /// A library file that could not be opened on this run and was moved aside, if any.
    public static var problem: SettingsFileError? { (try? MusicLibraryService.open())?.problem }
}

extension String {
    /// Case and accents folded, as the library's search compares text (and MPD's `find` and
    /// `musickit play TERM` after it).
    package var foldedForSearch: String { folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }
}
