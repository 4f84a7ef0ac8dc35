import PlatformSupport
import AudioEngine
import Foundation
import Glibc

/// Progress of a library scan.
/// (Linux addition)
public struct LibraryScanProgress: Sendable, Equatable {
    /// Files looked at so far, and how many the folders hold.
    public var filesSeen: Int
    public var fileCount: Int
    /// Files whose tags were (re)read because they are new or changed.
    public var filesRead: Int
}

/// What a scan did.
/// (Linux addition)
public struct LibraryScanResult: Sendable, Equatable {
    public var filesSeen: Int
    public var added: Int
    public var updated: Int
    public var unchanged: Int
    /// Songs whose files are gone (files that were skipped are forgotten without counting).
    public var removed: Int
    /// Files that could not be read as audio, with the reason (`DecoderError`'s message); a file
    /// cut short (its last half second does not decode) is one.
    public var skipped: [(path: String, reason: String)]

    public static func == (a: Self, b: Self) -> Bool {
        a.filesSeen == b.filesSeen && a.added == b.added && a.updated == b.updated && a.unchanged == b.unchanged
            && a.removed == b.removed && a.skipped.map(\.path) == b.skipped.map(\.path)
    }
}

/// Attributes of scanned songs that Apple's song resources do not have.
package enum LibraryAttributes {
    /// The album artist, where the file names one (a compilation's "Various Artists"): the
    /// library's albums, its search and MPD's `AlbumArtist` read it.
    package static let albumArtist = "albumArtistName"

    /// Which album a library song is on: its album's name and artist — the album artist the
    /// file names, else the song's artist — as one key (nil for a song without an album).
    static func albumKey(of song: ResourceObject) -> (key: String, name: String, artist: String)? {
        guard let name = song.string("albumName") else { return nil }
        let artist = song.string(albumArtist) ?? song.string("artistName") ?? ""
        return (name + "\u{1}" + artist, name, artist)
    }
}

/// The person's library in SQLite (`<data>/library.sqlite`): scanned files with their tags,
/// catalog items added to the library, library playlists, and the listening history.
///
/// Written in WAL mode with `BEGIN IMMEDIATE` transactions and a busy timeout, so several
/// processes can scan, edit and read at once without corrupting anything. A file that is not a
/// usable database is moved aside (`library.sqlite.corrupt-<time>`), reported, and a new one
/// started; the scanned part comes back with the next scan.
///
/// Thread safety: one thread at a time; `MusicLibraryService` keeps it behind a mutex.
final class LibraryStore: @unchecked Sendable {
    // @unchecked: used only behind MusicLibraryService's mutex.
    /// 3: files have their artwork (`artwork`, an artwork object as JSON).
    /// 4: files have their album artist and disc number (`album_artist`, `disc`).
    static let schemaVersion = "4"
    let database: SQLiteDatabase
    let path: URL
    /// Set when the file found on open was unusable and was moved aside.
    private(set) var problem: SettingsFileError?

    init(path: URL) throws {
        self.path = path
        try PrivateFiles.ensureDirectory(path.deletingLastPathComponent())
        PrivateFiles.removeStaleTemporaries(in: path.deletingLastPathComponent())
        // Created 0600 here, so SQLite's -wal and -shm beside it are too; never through a symlink.
        try PrivateFiles.createPrivateFileIfMissing(path.path)
        PrivateFiles.restrictToOwner(path.path, withDatabaseCompanions: true)
        do {
            database = try LibraryStore.openAndMigrate(path)
        } catch let error as SQLiteError where error.isCorruptOrForeign {
            let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
            let aside = path.deletingLastPathComponent().appendingPathComponent("\(path.lastPathComponent).corrupt-\(stamp)")
            _ = Glibc.rename(path.path, aside.path)
            for suffix in ["-wal", "-shm"] { unlink(path.path + suffix) }
            problem = SettingsFileError(file: path.path, reason: error.message, keptAt: aside.path)
            try PrivateFiles.createPrivateFileIfMissing(path.path)
            database = try LibraryStore.openAndMigrate(path)
        }
    }

    private static func openAndMigrate(_ path: URL) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: path.path)
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON")
        try database.execute("""
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
            CREATE TABLE IF NOT EXISTS files(
                path TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, mtime INTEGER NOT NULL,
                readable INTEGER NOT NULL, reason TEXT,
                title TEXT, artist TEXT, album TEXT, genre TEXT, track INTEGER, duration REAL, year TEXT,
                added REAL NOT NULL, artwork TEXT, album_artist TEXT, disc INTEGER);
            CREATE TABLE IF NOT EXISTS catalog_items(
                type TEXT NOT NULL, id TEXT NOT NULL, library_id TEXT NOT NULL UNIQUE, json TEXT NOT NULL, added REAL NOT NULL,
                PRIMARY KEY(type, id));
            CREATE TABLE IF NOT EXISTS playlists(
                id TEXT PRIMARY KEY, name TEXT NOT NULL, description TEXT, author TEXT, added REAL NOT NULL, modified REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS playlist_entries(
                playlist_id TEXT NOT NULL REFERENCES playlists(id) ON DELETE CASCADE, position INTEGER NOT NULL,
                json TEXT NOT NULL, PRIMARY KEY(playlist_id, position));
            CREATE TABLE IF NOT EXISTS plays(
                rowid INTEGER PRIMARY KEY, played REAL NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL, json TEXT NOT NULL,
                container_type TEXT, container_json TEXT);
            CREATE INDEX IF NOT EXISTS files_album ON files(album, artist);
            CREATE INDEX IF NOT EXISTS files_artist ON files(artist);
            """)
        let version = try database.statement("SELECT value FROM meta WHERE key = 'schema'").rows { $0.string(0) }.first ?? nil
        if version == nil {
            try database.statement("INSERT INTO meta(key, value) VALUES ('schema', ?1)").run([schemaVersion])
        } else if version == "2" || version == "3" {
            // Files gain their artwork (3), album artist and disc (4): every file is read again
            // at the next scan for them.
            try database.transaction {
                if version == "2" { try database.execute("ALTER TABLE files ADD COLUMN artwork TEXT") }
                try database.execute("""
                    ALTER TABLE files ADD COLUMN album_artist TEXT; ALTER TABLE files ADD COLUMN disc INTEGER;
                    UPDATE files SET mtime = -1
                    """)
                try database.statement("UPDATE meta SET value = ?1 WHERE key = 'schema'").run([schemaVersion])
            }
        } else if version != schemaVersion {
            throw SQLiteError(operation: "open", code: 26, message: "library schema \(version ?? "?") is not \(schemaVersion)",
                              path: path.path)
        }
        return database
    }

    /// A stable ID from a path (FNV-1a, hex): the same file keeps its ID across scans.
    static func id(prefix: String, _ text: String) -> String {
        prefix + String(fnv1a(text.utf8), radix: 16)
    }

    /// The 64-bit FNV-1a hash of `bytes`: stable across runs (Swift's `Hasher` is seeded per process).
    static func fnv1a<Bytes: Sequence>(_ bytes: Bytes) -> UInt64 where Bytes.Element == UInt8 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    // MARK: Scanning

    /// Brings the files table in line with `folders`: new and changed files (size or
    /// modification time) are read, unchanged ones are not opened, vanished ones removed.
    func scan(folders: [URL], artworkDirectory: URL, progress: ((LibraryScanProgress) -> Void)?) throws -> LibraryScanResult {
        let artwork = LibraryArtwork(directory: artworkDirectory)
        var found: [(path: String, size: Int, mtime: Int)] = []
        for folder in folders {
            guard let enumerator = FileManager.default.enumerator(
                at: folder, includingPropertiesForKeys: [.fileSizeKey, .contentModificationDateKey, .isRegularFileKey],
                options: [.skipsHiddenFiles]) else { continue }
            for case let url as URL in enumerator where AudioFileDecoder.fileExtensions.contains(url.pathExtension.lowercased()) {
                var status = stat()
                guard stat(url.path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { continue }
                found.append((url.path, Int(status.st_size),
                              Int(status.st_mtim.tv_sec) * 1_000_000_000 + Int(status.st_mtim.tv_nsec)))
            }
        }
        var known: [String: (size: Int, mtime: Int, readable: Bool)] = [:]
        for row in try database.statement("SELECT path, size, mtime, readable FROM files")
            .rows([], { ($0.string(0) ?? "", $0.int(1), $0.int(2), $0.int(3) != 0) }) {
            known[row.0] = (row.1, row.2, row.3)
        }
        var result = LibraryScanResult(filesSeen: found.count, added: 0, updated: 0, unchanged: 0, removed: 0, skipped: [])
        var report = LibraryScanProgress(filesSeen: 0, fileCount: found.count, filesRead: 0)
        progress?(report)
        let now = Date().timeIntervalSince1970
        try database.transaction {
            let upsert = try database.statement("""
                INSERT INTO files(path, id, size, mtime, readable, reason, title, artist, album, genre, track, duration, year, added,
                                  artwork, album_artist, disc)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
                ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime, readable = excluded.readable,
                    reason = excluded.reason, title = excluded.title, artist = excluded.artist, album = excluded.album,
                    genre = excluded.genre, track = excluded.track, duration = excluded.duration, year = excluded.year,
                    artwork = excluded.artwork, album_artist = excluded.album_artist, disc = excluded.disc
                """)
            for (index, file) in found.enumerated() {
                report.filesSeen = index + 1
                if let old = known[file.path], old.size == file.size, old.mtime == file.mtime {
                    result.unchanged += 1
                } else {
                    let id = LibraryStore.id(prefix: "i.", file.path)
                    var readable = true
                    do {
                        let decoder = try AudioFileDecoder(path: file.path)
                        try Self.decodeTheEnd(of: decoder)
                        let (info, embeddedCover) = decoder.readAllTags()
                        let stem = Song.nameWithoutExtension(ofFileAt: file.path)
                        let cover = artwork.artwork(embedded: embeddedCover, besides: file.path)?.serialized
                        try upsert.run([file.path, id, file.size, file.mtime, true, nil, info.title ?? stem,
                                        info.artist, info.album, info.genre, info.trackNumber, info.duration, info.date, now, cover,
                                        info.albumArtist, info.discNumber])
                    } catch let error as DecoderError {
                        readable = false
                        try upsert.run([file.path, id, file.size, file.mtime, false, error.description, nil, nil, nil, nil,
                                        nil, nil, nil, now, nil, nil, nil])
                    }
                    if known[file.path] != nil { result.updated += 1 } else if readable { result.added += 1 }
                    report.filesRead += 1
                }
                if index % 500 == 0 { progress?(report) }
            }
            let present = Set(found.map(\.path))
            let remove = try database.statement("DELETE FROM files WHERE path = ?1")
            for (path, file) in known where !present.contains(path) {
                try remove.run([path])
                if file.readable { result.removed += 1 }  // songs; a file that was skipped was none
            }
        }
        progress?(report)
        result.skipped = try database.statement("SELECT path, reason FROM files WHERE readable = 0 ORDER BY path")
            .rows { ($0.string(0) ?? "", $0.string(1) ?? "") }
        return result
    }

    /// Decodes a file's last half second: a file cut short (a broken copy or download) still
    /// opens, with the length its header declares, and fails only where its data stops.
    /// (Reading it all would find a break in the middle too, at ~100× the cost.)
    private static func decodeTheEnd(of decoder: AudioFileDecoder) throws(DecoderError) {
        let info = decoder.info
        guard info.frameCount > 0, info.channelCount > 0 else { return }
        try decoder.seek(toFrame: max(0, info.frameCount - info.sampleRate / 2))
        let chunk = 4_096
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: chunk * info.channelCount)
        defer { buffer.deallocate() }
        while try decoder.read(into: buffer, frameCount: chunk) > 0 {}
    }

    // MARK: Reading

    /// Library songs: scanned files, then catalog songs added to the library.
    func songs() throws -> [ResourceObject] {
        let files = try database.statement("""
            SELECT id, path, title, artist, album, genre, track, duration, year, added, artwork, album_artist, disc
            FROM files WHERE readable = 1
            """).rows { row -> ResourceObject in
            let id = row.string(0) ?? ""
            var attributes: [String: JSONValue] = [
                "name": .string(row.string(2) ?? ""),
                "playParams": .object(["id": .string(id), "kind": .string("song"), "isLibrary": .bool(true)]),
                "filePath": .string(row.string(1) ?? ""),
                "dateAdded": .string(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: row.double(9)))),
            ]
            if let artist = row.string(3) { attributes["artistName"] = .string(artist) }
            if let album = row.string(4) { attributes["albumName"] = .string(album) }
            if let genre = row.string(5) { attributes["genreNames"] = .array([.string(genre)]) }
            if !row.isNull(6) { attributes["trackNumber"] = .number(Double(row.int(6))) }
            if !row.isNull(7) { attributes["durationInMillis"] = .number((row.double(7) * 1000).rounded()) }
            if let year = row.string(8) { attributes["releaseDate"] = .string(year) }
            if let artwork = row.string(10).flatMap({ try? JSONValue.parse($0) }) { attributes["artwork"] = artwork }
            if let albumArtist = row.string(11) { attributes[LibraryAttributes.albumArtist] = .string(albumArtist) }
            if !row.isNull(12) { attributes["discNumber"] = .number(Double(row.int(12))) }
            return ResourceObject(id: id, type: "library-songs", href: "/v1/me/library/songs/\(id)", attributes: attributes)
        }
        return files + (try catalogItems(type: "songs"))
    }

    /// Catalog items of `type` added to the library, as library resources that point at them.
    func catalogItems(type: String) throws -> [ResourceObject] {
        try database.statement("SELECT library_id, json, added FROM catalog_items WHERE type = ?1 ORDER BY added, rowid")
            .rows([type]) { row -> ResourceObject? in
                guard let catalog = (try? JSONValue.parse(row.string(1) ?? "")).flatMap(ResourceObject.init(json:)) else { return nil }
                var resource = catalog
                let libraryID = row.string(0) ?? ""
                resource.id = libraryID
                resource.type = "library-" + type
                resource.href = "/v1/me/library/\(type)/\(libraryID)"
                resource.attributes["dateAdded"] = .string(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: row.double(2))))
                var playParams = catalog.attributes["playParams"]?.object ?? [:]
                playParams["id"] = .string(libraryID)
                playParams["isLibrary"] = .bool(true)
                playParams["catalogId"] = .string(catalog.id)
                resource.attributes["playParams"] = .object(playParams)
                resource.relationships["catalog"] = ResourceObject.Relationship(data: [catalog])
                return resource
            }.compactMap { $0 }
    }

    /// Library playlists with their entries.
    func playlists() throws -> [ResourceObject] {
        let entries = try database.statement("SELECT playlist_id, json FROM playlist_entries ORDER BY playlist_id, position")
            .rows { ($0.string(0) ?? "", (try? JSONValue.parse($0.string(1) ?? "")).flatMap(ResourceObject.init(json:))) }
        var byPlaylist: [String: [ResourceObject]] = [:]
        for (id, entry) in entries { if let entry { byPlaylist[id, default: []].append(entry) } }
        let formatter = ISO8601DateFormatter()
        return try database.statement("SELECT id, name, description, author, added, modified FROM playlists ORDER BY added, rowid")
            .rows { row in
                let id = row.string(0) ?? ""
                var attributes: [String: JSONValue] = [
                    "name": .string(row.string(1) ?? ""),
                    "playParams": .object(["id": .string(id), "kind": .string("playlist"), "isLibrary": .bool(true)]),
                    "canEdit": .bool(true),
                    "dateAdded": .string(formatter.string(from: Date(timeIntervalSince1970: row.double(4)))),
                    "lastModifiedDate": .string(formatter.string(from: Date(timeIntervalSince1970: row.double(5)))),
                ]
                if let description = row.string(2) { attributes["description"] = .object(["standard": .string(description)]) }
                if let author = row.string(3) { attributes["curatorName"] = .string(author) }
                return ResourceObject(id: id, type: "library-playlists", href: "/v1/me/library/playlists/\(id)",
                                      attributes: attributes,
                                      relationships: ["tracks": .init(data: byPlaylist[id] ?? [])])
            }
    }

    // MARK: Writing

    /// Adds a catalog item; false when it was there already.
    func addCatalogItem(_ resource: ResourceObject) throws -> Bool {
        let statement = try database.statement("""
            INSERT INTO catalog_items(type, id, library_id, json, added) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(type, id) DO NOTHING
            """)
        let prefix = resource.type == "songs" ? "i." : resource.type == "albums" ? "l." : "p."
        try statement.run([resource.type, resource.id, LibraryStore.id(prefix: prefix, "catalog:\(resource.type):\(resource.id)"),
                           resource.jsonValue.serialized, Date().timeIntervalSince1970])
        return database.changes > 0
    }

    func createPlaylist(name: String, description: String?, author: String?, entries: [ResourceObject]) throws -> String {
        let now = Date().timeIntervalSince1970
        let id = LibraryStore.id(prefix: "p.", "\(name)|\(now)|\(UUID().uuidString)")
        try database.transaction {
            try database.statement("INSERT INTO playlists(id, name, description, author, added, modified) VALUES (?1, ?2, ?3, ?4, ?5, ?5)")
                .run([id, name, description, author, now])
            try insert(entries, into: id, from: 0)
        }
        return id
    }

    /// Changes a playlist's details; `entries`, when given, replaces its items.
    func editPlaylist(id: String, name: String?, description: String?, author: String?, entries: [ResourceObject]?) throws -> Bool {
        try database.transaction {
            try database.statement("""
                UPDATE playlists SET name = coalesce(?2, name), description = coalesce(?3, description),
                    author = coalesce(?4, author), modified = ?5 WHERE id = ?1
                """).run([id, name, description, author, Date().timeIntervalSince1970])
            guard database.changes > 0 else { return false }
            if let entries {
                try database.statement("DELETE FROM playlist_entries WHERE playlist_id = ?1").run([id])
                try insert(entries, into: id, from: 0)
            }
            return true
        }
    }

    func appendToPlaylist(id: String, _ entries: [ResourceObject]) throws -> Bool {
        try database.transaction {
            let exists = try database.statement("SELECT count(*) FROM playlists WHERE id = ?1").rows([id]) { $0.int(0) }.first ?? 0
            guard exists > 0 else { return false }
            let next = try database.statement("SELECT coalesce(max(position) + 1, 0) FROM playlist_entries WHERE playlist_id = ?1")
                .rows([id]) { $0.int(0) }.first ?? 0
            try insert(entries, into: id, from: next)
            try database.statement("UPDATE playlists SET modified = ?2 WHERE id = ?1").run([id, Date().timeIntervalSince1970])
            return true
        }
    }

    private func insert(_ entries: [ResourceObject], into playlist: String, from start: Int) throws {
        let statement = try database.statement("INSERT INTO playlist_entries(playlist_id, position, json) VALUES (?1, ?2, ?3)")
        for (offset, entry) in entries.enumerated() {
            try statement.run([playlist, start + offset, entry.jsonValue.serialized])
        }
    }

    // MARK: Listening history

    /// Adds plays to the listening history, in one transaction: each when it was heard, the entry
    /// and the album or playlist it was played from.
    func recordPlays(_ plays: some Sequence<(played: Date, resource: ResourceObject, container: ResourceObject?)>) throws {
        try database.transaction {
            let statement = try database.statement("""
                INSERT INTO plays(played, type, id, json, container_type, container_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                """)
            for (played, resource, container) in plays {
                try statement.run([played.timeIntervalSince1970, resource.type, resource.id, resource.jsonValue.serialized,
                                   container?.type, container?.jsonValue.serialized])
            }
        }
    }

    /// Recently played resources of `types`, newest first, each once: the entries themselves,
    /// or (`containers`) the albums and playlists they were played from.
    func recentlyPlayed(containers: Bool, types: Set<String>, limit: Int, offset: Int) throws -> [ResourceObject] {
        let column = containers ? "container_json" : "json"
        let typeColumn = containers ? "container_type" : "type"
        var seen = Set<String>()
        var found: [ResourceObject] = []
        let statement = try database.statement("""
            SELECT \(column), \(typeColumn) FROM plays WHERE \(typeColumn) IS NOT NULL ORDER BY rowid DESC
            """)
        try statement.forEachRow { row in
            guard let type = row.string(1), types.contains(type), let text = row.string(0),
                  let resource = (try? JSONValue.parse(text)).flatMap(ResourceObject.init(json:)),
                  seen.insert(type + "/" + resource.id).inserted else { return true }
            if seen.count > offset { found.append(resource) }
            return found.count < limit
        }
        return found
    }

    /// What was played since `date`, newest first (at most `limit` plays): each play's entry and
    /// the album or playlist it was played from.
    func plays(since date: Date, limit: Int) throws -> [(played: Date, entry: ResourceObject, container: ResourceObject?)] {
        try database.statement("""
            SELECT played, json, container_json FROM plays WHERE played >= ?1 ORDER BY rowid DESC LIMIT ?2
            """).rows([date.timeIntervalSince1970, limit]) { row -> (Date, ResourceObject, ResourceObject?)? in
            guard let entry = (try? JSONValue.parse(row.string(1) ?? "")).flatMap(ResourceObject.init(json:)) else { return nil }
            let container = row.string(2).flatMap { try? JSONValue.parse($0) }.flatMap(ResourceObject.init(json:))
            return (Date(timeIntervalSince1970: row.double(0)), entry, container)
        }.compactMap { $0 }
    }
}
