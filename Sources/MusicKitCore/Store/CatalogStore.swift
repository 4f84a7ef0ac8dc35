import PlatformSupport
import Foundation

/// Progress of a catalog import, for people waiting on a long one.
/// (Linux addition)
public struct CatalogImportProgress: Sendable, Equatable {
    public enum Phase: String, Sendable { case reading, writing, indexing, done }
    public var phase: Phase
    public var documentsRead: Int
    public var documentCount: Int
    public var resourcesWritten: Int
}

/// The catalog in SQLite: every resource of every document, per storefront, with an FTS5 index
/// for search, equivalence groups and charts. Built from the documents into a new file that
/// replaces the old one when complete, so a reader never sees half an import.
///
/// Thread safety: one thread at a time (the catalog service keeps it behind a mutex).
final class CatalogStore: @unchecked Sendable {
    // @unchecked: used only behind MusicCatalogService's mutex, one thread at a time.
    static let schemaVersion = "6"

    let path: URL
    private let database: SQLiteDatabase
    /// Why the database was rebuilt on open, if it was (corrupt, foreign, documents changed).
    private(set) var rebuildReason: String?
    /// Documents that could not be imported, with file and JSON path.
    private(set) var documentErrors: [CatalogDocumentError] = []
    /// Resources skipped or replaced while importing, with file and JSON path.
    private(set) var documentNotes: [CatalogDocumentError] = []
    /// Resources kept (each storefront's copy once).
    private(set) var resourceCount = 0

    /// Opens the database at `path`, (re)building it from `documents` when it is missing,
    /// unreadable, of another schema, or built from other documents.
    init(path: URL, documents: [URL], progress: ((CatalogImportProgress) -> Void)? = nil) throws {
        self.path = path
        let fingerprint = CatalogStore.fingerprint(documents)
        var reason: String?
        if FileManager.default.fileExists(atPath: path.path) {
            do {
                let existing = try SQLiteDatabase(path: path.path)
                let version = try existing.statement("SELECT value FROM meta WHERE key = 'schema'").rows { $0.string(0) }.first
                let built = try existing.statement("SELECT value FROM meta WHERE key = 'fingerprint'").rows { $0.string(0) }.first
                if version != CatalogStore.schemaVersion {
                    reason = "catalog database schema \(version.map { "\($0 ?? "?")" } ?? "?") is not \(CatalogStore.schemaVersion)"
                } else if built != fingerprint {
                    reason = "catalog documents changed"
                }
            } catch let error as SQLiteError {
                reason = "\(path.path) is not a usable catalog database (\(error.message)); rebuilt from the documents"
            }
        } else {
            reason = "first use"
        }
        if let reason {
            rebuildReason = reason
            try CatalogStore.build(at: path, documents: documents, fingerprint: fingerprint, progress: progress)
        }
        database = try SQLiteDatabase(path: path.path)
        // Read through a memory map and a larger page cache: a keystroke's suggestions read a few
        // hundred rows spread over the file, which otherwise cost a read() each once they fall
        // out of SQLite's 2 MB default cache (the p95 of a keystroke on a million songs).
        try database.execute("PRAGMA query_only = 1; PRAGMA mmap_size = 4294967296; PRAGMA cache_size = -32768")
        documentErrors = try CatalogStore.storedErrors("errors", in: database)
        documentNotes = try CatalogStore.storedErrors("notes", in: database)
        resourceCount = try database.statement("SELECT count(*) FROM resources").rows { $0.int(0) }.first ?? 0
    }

    private static func storedErrors(_ key: String, in database: SQLiteDatabase) throws -> [CatalogDocumentError] {
        try database.statement("SELECT value FROM meta WHERE key = ?1").rows([key]) { statement in
            (try? JSONDecoder().decode([StoredError].self, from: Data((statement.string(0) ?? "[]").utf8))) ?? []
        }.first?.map { CatalogDocumentError(file: $0.file, jsonPath: $0.path, reason: $0.reason) } ?? []
    }

    private struct StoredError: Codable {
        var file: String
        var path: String
        var reason: String
    }

    /// Size and modification time of every document, and the schema: what the database was built from.
    static func fingerprint(_ documents: [URL]) -> String {
        var parts = ["schema \(schemaVersion)"]
        for document in documents.sorted(by: { $0.path < $1.path }) {
            let attributes = try? FileManager.default.attributesOfItem(atPath: document.path)
            let size = (attributes?[.size] as? NSNumber)?.intValue ?? -1
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            parts.append("\(document.path) \(size) \(Int(modified * 1000))")
        }
        return parts.joined(separator: "\n")
    }

    // MARK: - Building

    static func build(at path: URL, documents: [URL], fingerprint: String,
                      progress: ((CatalogImportProgress) -> Void)?) throws {
        try PrivateFiles.ensureDirectory(path.deletingLastPathComponent())
        // Earlier builds of processes that died (`kill -9` during an import) are removed.
        PrivateFiles.removeStaleTemporaries(in: path.deletingLastPathComponent())
        let (descriptor, temporary) = try PrivateFiles.makeTemporary(beside: path, suffix: "building")
        close(descriptor)
        defer { try? FileManager.default.removeItem(at: temporary) }
        var report = CatalogImportProgress(phase: .reading, documentsRead: 0, documentCount: documents.count, resourcesWritten: 0)
        progress?(report)

        let database = try SQLiteDatabase(path: temporary.path)
        try database.execute("""
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
            CREATE TABLE resources(
                rowid INTEGER PRIMARY KEY,
                storefront TEXT NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL,
                name TEXT, artist TEXT, album TEXT, isrc TEXT, upc TEXT, rating TEXT,
                json TEXT NOT NULL, document INTEGER NOT NULL DEFAULT 0);
            CREATE TEMP TABLE replaced(storefront TEXT, type TEXT, id TEXT, earlier INTEGER, later INTEGER);
            CREATE TEMP TRIGGER note_replaced BEFORE UPDATE OF json ON resources WHEN old.document != new.document
            BEGIN
                INSERT INTO replaced VALUES (old.storefront, old.type, old.id, old.document, new.document);
            END;
            CREATE TABLE equivalents(groupid INTEGER NOT NULL, storefront TEXT NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL);
            CREATE TABLE charts(storefront TEXT NOT NULL, type TEXT NOT NULL, chart TEXT NOT NULL, name TEXT,
                                position INTEGER NOT NULL, id TEXT NOT NULL);
            CREATE TABLE container_tracks(storefront TEXT NOT NULL, container_type TEXT NOT NULL, container_id TEXT NOT NULL,
                                          position INTEGER NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL);
            """)
        var errors: [StoredError] = []
        var notes: [StoredError] = []
        var groupID = 0
        try database.execute("BEGIN")
        try database.execute("CREATE UNIQUE INDEX resources_key ON resources(storefront, type, id)")
        // In the order given: the bundled documents, then the person's own, which override them.
        for (documentIndex, document) in documents.enumerated() {
            do {
                let parsed = try CatalogDocument(url: document)
                notes += parsed.notes.map { StoredError(file: $0.file, path: $0.jsonPath, reason: $0.reason) }
                let merged = CatalogStore.merge(parsed.resources)
                let trackRow = try database.statement("""
                    INSERT INTO container_tracks(storefront, container_type, container_id, position, type, id)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                    """)
                for resource in merged {
                    try upsert(resource, storefront: parsed.storefront, document: documentIndex + 1, into: database)
                    if resource.type == "albums" || resource.type == "playlists", let tracks = resource.relationships["tracks"] {
                        try database.statement("DELETE FROM container_tracks WHERE storefront = ?1 AND container_type = ?2 AND container_id = ?3")
                            .run([parsed.storefront, resource.type, resource.id])
                        for (position, track) in tracks.data.enumerated() {
                            try trackRow.run([parsed.storefront, resource.type, resource.id, position, track.type, track.id])
                        }
                    }
                    report.resourcesWritten += 1
                    if report.resourcesWritten % 50_000 == 0 {
                        report.phase = .writing
                        progress?(report)
                    }
                }
                for chart in parsed.charts {
                    let statement = try database.statement(
                        "INSERT INTO charts(storefront, type, chart, name, position, id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
                    for (position, id) in chart.ids.enumerated() {
                        try statement.run([parsed.storefront, chart.type, chart.chart, chart.name, position, id])
                    }
                }
                // What this document replaced of an earlier one (the trigger noted it), by the path
                // where this document has it.
                let replaced = try database.statement("SELECT storefront, type, id, earlier FROM replaced WHERE later = ?1")
                    .rows([documentIndex + 1]) { ($0.string(0) ?? "", $0.string(1) ?? "", $0.string(2) ?? "", $0.int(3)) }
                if !replaced.isEmpty {
                    var paths: [String: String] = [:]
                    for (resource, path) in zip(parsed.resources, parsed.resourcePaths) where paths[resource.type + "/" + resource.id] == nil {
                        paths[resource.type + "/" + resource.id] = path
                    }
                    for (storefront, type, id, earlier) in replaced {
                        let from = earlier >= 1 && earlier <= documents.count ? documents[earlier - 1].path : "an earlier document"
                        notes.append(StoredError(file: document.path, path: paths[type + "/" + id] ?? "(top level)",
                                                 reason: "replaces \(storefront)/\(type)/\(id) from \(from)"))
                    }
                }
                for group in parsed.equivalents {
                    groupID += 1
                    let statement = try database.statement(
                        "INSERT INTO equivalents(groupid, storefront, type, id) VALUES (?1, ?2, ?3, ?4)")
                    for member in group { try statement.run([groupID, member.storefront, member.type, member.id]) }
                }
            } catch let error as CatalogDocumentError {
                errors.append(StoredError(file: error.file, path: error.jsonPath, reason: error.reason))
            }
            report.documentsRead += 1
            report.phase = .reading
            progress?(report)
        }
        report.phase = .indexing
        progress?(report)
        try database.execute("""
            CREATE INDEX resources_isrc ON resources(isrc) WHERE isrc IS NOT NULL;
            CREATE INDEX resources_upc ON resources(upc) WHERE upc IS NOT NULL;
            CREATE INDEX resources_type ON resources(storefront, type, rowid);
            CREATE INDEX equivalents_member ON equivalents(type, id);
            CREATE INDEX charts_key ON charts(storefront, type, chart, position);
            CREATE INDEX container_tracks_key ON container_tracks(storefront, container_type, container_id, position);
            CREATE VIRTUAL TABLE search USING fts5(
                name, artist, album, type, content='resources', content_rowid='rowid',
                tokenize='unicode61 remove_diacritics 2', prefix='1 2 3');
            INSERT INTO search(rowid, name, artist, album, type) SELECT rowid, name, artist, album, type FROM resources;
            INSERT INTO search(search) VALUES('optimize');
            """)
        let errorsJSON = String(decoding: try JSONEncoder().encode(errors), as: UTF8.self)
        let notesJSON = String(decoding: try JSONEncoder().encode(notes), as: UTF8.self)
        try database.statement("""
            INSERT INTO meta(key, value) VALUES ('schema', ?1), ('fingerprint', ?2), ('errors', ?3), ('notes', ?4)
            """).run([schemaVersion, fingerprint, errorsJSON, notesJSON])
        try database.execute("COMMIT")
        try database.execute("ANALYZE")
        // Replace the old database in one step: readers holding it open keep their copy.
        if rename(temporary.path, path.path) != 0 {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path.path])
        }
        report.phase = .done
        progress?(report)
    }

    /// One resource per (type, id): a full copy wins over an identifier-only one; two full
    /// copies merge their relationships and views.
    static func merge(_ resources: [ResourceObject]) -> [ResourceObject] {
        var order: [String] = []
        var byKey: [String: ResourceObject] = [:]
        for resource in resources {
            let key = resource.type + "/" + resource.id
            guard var existing = byKey[key] else {
                byKey[key] = resource
                order.append(key)
                continue
            }
            if existing.attributes.isEmpty { existing.attributes = resource.attributes }
            for (name, relationship) in resource.relationships where existing.relationships[name] == nil {
                existing.relationships[name] = relationship
            }
            for (name, view) in resource.views where existing.views[name] == nil { existing.views[name] = view }
            byKey[key] = existing
        }
        return order.map { byKey[$0]! }
    }

    /// Stores `resource` of document number `document` (from 1); a later document's full copy
    /// replaces an earlier one (the `note_replaced` trigger records it).
    private static func upsert(_ resource: ResourceObject, storefront: String, document: Int,
                               into database: SQLiteDatabase) throws {
        let json = resource.jsonValue.serialized
        let attributes = resource.attributes
        let insert = try database.statement("""
            INSERT INTO resources(storefront, type, id, name, artist, album, isrc, upc, rating, json, document)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            ON CONFLICT(storefront, type, id) DO UPDATE SET
                name = excluded.name, artist = excluded.artist, album = excluded.album, isrc = excluded.isrc,
                upc = excluded.upc, rating = excluded.rating, json = excluded.json, document = excluded.document
            WHERE excluded.name IS NOT NULL
            """)
        try insert.run([storefront, resource.type, resource.id, attributes["name"]?.string,
                        attributes["artistName"]?.string ?? attributes["curatorName"]?.string,
                        attributes["albumName"]?.string, attributes["isrc"]?.string, attributes["upc"]?.string,
                        attributes["contentRating"]?.string, json, document])
    }

    // MARK: - Reading

    private func decode(_ json: String) -> ResourceObject? {
        (try? JSONValue.parse(json)).flatMap(ResourceObject.init(json:))
    }

    /// Resources of `type` in `storefront` by id, in the order asked (missing ones left out).
    func resources(type: String, ids: [String], storefront: String) throws -> [ResourceObject] {
        guard !ids.isEmpty else { return [] }
        var found: [String: ResourceObject] = [:]
        for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
            let placeholders = (0..<chunk.count).map { "?\($0 + 3)" }.joined(separator: ",")
            let statement = try database.statement(
                "SELECT json FROM resources WHERE storefront = ?1 AND type = ?2 AND id IN (\(placeholders))")
            for resource in try statement.rows([storefront, type] + chunk, { $0.string(0).flatMap(decode) }) {
                if let resource { found[resource.id] = resource }
            }
        }
        return ids.compactMap { found[$0] }
    }

    /// Resources of `type` whose `column` (isrc or upc) is one of `values`.
    func resources(type: String, column: String, values: [String], storefront: String) throws -> [ResourceObject] {
        precondition(column == "isrc" || column == "upc")
        guard !values.isEmpty else { return [] }
        let placeholders = (0..<values.count).map { "?\($0 + 3)" }.joined(separator: ",")
        let statement = try database.statement(
            "SELECT json FROM resources WHERE storefront = ?1 AND type = ?2 AND \(column) IN (\(placeholders)) ORDER BY rowid")
        return try statement.rows([storefront, type] + values) { $0.string(0).flatMap(decode) }.compactMap { $0 }
    }

    /// Every resource of `type` in `storefront`, in document order.
    func resources(type: String, storefront: String, limit: Int, offset: Int) throws -> (items: [ResourceObject], total: Int) {
        let statement = try database.statement(
            "SELECT json FROM resources WHERE storefront = ?1 AND type = ?2 ORDER BY rowid LIMIT ?3 OFFSET ?4")
        let items = try statement.rows([storefront, type, limit, offset]) { $0.string(0).flatMap(decode) }.compactMap { $0 }
        let total = try database.statement("SELECT count(*) FROM resources WHERE storefront = ?1 AND type = ?2")
            .rows([storefront, type]) { $0.int(0) }.first ?? 0
        return (items, total)
    }

    /// The storefronts the catalog has resources for.
    func storefronts() throws -> [String] {
        try database.statement("SELECT DISTINCT storefront FROM resources ORDER BY storefront").rows { $0.string(0) ?? "" }
    }

    /// Full-text search over names, artists and albums: `limit` matches of `type` from
    /// `offset`, and whether more follow. Each word of `term` matches as a prefix.
    ///
    /// Ranked in tiers, each in catalog order: items whose name holds every word, then whose
    /// artist does, then the rest (words spread over name, artist and album). Each tier is an
    /// FTS5 query read in rowid order that stops at the limit, so a common word costs as little
    /// as a rare one (relevance scoring, by contrast, must score every match).
    func search(term: String, type: String, storefront: String, limit: Int, offset: Int,
                excludeExplicit: Bool, namesOnly: Bool = false) throws -> (items: [ResourceObject], hasMore: Bool) {
        let words = CatalogStore.ftsWords(term)
        guard !words.isEmpty else { return ([], false) }
        let all = words.joined(separator: " ")
        // Other types than songs are matched in the index too: a search for albums must not walk
        // every song that matches (a million of them for a one-letter prefix). Songs are most of
        // the catalog: for them the type is checked on the rows found (cheaper than intersecting).
        let kind = type == "songs" ? "" : " AND {type} : \"\(type)\""
        let tiers = ["{name} : (\(all))\(kind)", "{artist} : (\(all))\(kind)", "{name artist album} : (\(all))\(kind)"]
            .prefix(namesOnly ? 1 : 3)
        let wanted = offset + limit + 1
        var seen = Set<Int>()
        var rows: [(rowid: Int, json: String)] = []
        let statement = try database.statement("""
            SELECT r.rowid, r.json FROM search JOIN resources r ON r.rowid = search.rowid
            WHERE search MATCH ?1 AND r.storefront = ?2 AND r.type = ?3 AND (?4 = 0 OR r.rating IS NOT 'explicit')
            ORDER BY search.rowid LIMIT ?5
            """)
        for query in tiers where rows.count < wanted {
            let found = try statement.rows([query, storefront, type, excludeExplicit, wanted - rows.count + seen.count]) {
                ($0.int(0), $0.string(1) ?? "")
            }
            for row in found where rows.count < wanted && seen.insert(row.0).inserted {
                rows.append((row.0, row.1))
            }
        }
        let page = rows.dropFirst(offset).prefix(limit).compactMap { decode($0.json) }
        return (Array(page), rows.count > offset + limit)
    }

    /// Names of songs, albums, artists and playlists in `storefront` whose name matches every
    /// word of `term` as a prefix, the ones that start with the term first, then the shorter;
    /// each name once (case folded), at most `limit`. With `topTypes`, also the first
    /// `perType` resources of each of those types whose name matches (a picker's top results),
    /// taken from the same scan of the name index where it reached them, else asked for.
    func suggestions(term: String, storefront: String, limit: Int, excludeExplicit: Bool,
                     topTypes: [String] = [], perType: Int = 0) throws -> (names: [String], top: [String: [ResourceObject]]) {
        let words = CatalogStore.ftsWords(term)
        guard !words.isEmpty, limit > 0 else { return ([], [:]) }
        let scanned = 500
        let rows = try database.statement("""
            SELECT r.rowid, r.type, r.name FROM search JOIN resources r ON r.rowid = search.rowid
            WHERE search MATCH ?1 AND r.storefront = ?2 AND r.type IN ('songs', 'albums', 'artists', 'playlists')
              AND (?3 = 0 OR r.rating IS NOT 'explicit') AND r.name IS NOT NULL
            LIMIT \(scanned)
            """).rows(["{name} : (\(words.joined(separator: " ")))", storefront, excludeExplicit]) {
            (rowid: $0.int(0), type: $0.string(1) ?? "", name: $0.string(2) ?? "")
        }
        let folded = term.lowercased().trimmingCharacters(in: .whitespaces)
        var seen = Set<String>()
        let unique = rows.map { $0.name.lowercased() }.filter { !$0.isEmpty && seen.insert($0).inserted }
        let names = Array(unique.sorted { ($0.hasPrefix(folded) ? 0 : 1, $0.count, $0) < ($1.hasPrefix(folded) ? 0 : 1, $1.count, $1) }
            .prefix(limit))
        var top: [String: [ResourceObject]] = [:]
        for type in topTypes where perType > 0 {
            let found = rows.filter { $0.type == type }.prefix(perType).map(\.rowid)
            if found.count == perType || rows.count < scanned {
                // The scan saw them first (or saw every match): the same as asking for them.
                top[type] = try resources(rowids: found)
            } else {
                top[type] = try search(term: term, type: type, storefront: storefront, limit: perType, offset: 0,
                                       excludeExplicit: excludeExplicit, namesOnly: true).items
            }
        }
        return (names, top)
    }

    /// Resources by rowid, in the order given.
    private func resources(rowids: [Int]) throws -> [ResourceObject] {
        guard !rowids.isEmpty else { return [] }
        let placeholders = (1...rowids.count).map { "?\($0)" }.joined(separator: ",")
        var byRowid: [Int: ResourceObject] = [:]
        for (rowid, resource) in try database.statement("SELECT rowid, json FROM resources WHERE rowid IN (\(placeholders))")
            .rows(rowids, { ($0.int(0), $0.string(1).flatMap(decode)) }) {
            byRowid[rowid] = resource
        }
        return rowids.compactMap { byRowid[$0] }
    }

    /// `"word"*` for each word of `term`: quoted, so FTS5 syntax in a search term is taken literally.
    static func ftsWords(_ term: String) -> [String] {
        term.lowercased().split { !$0.isLetter && !$0.isNumber }.map { "\"\($0)\"*" }
    }

    /// The members (storefront, id) of the equivalence group of `id`, if it has one.
    func equivalents(type: String, id: String) throws -> [(storefront: String, id: String)] {
        let statement = try database.statement("""
            SELECT e2.storefront, e2.id FROM equivalents e1 JOIN equivalents e2 ON e1.groupid = e2.groupid
            WHERE e1.type = ?1 AND e1.id = ?2 ORDER BY e2.rowid
            """)
        return try statement.rows([type, id]) { ($0.string(0) ?? "", $0.string(1) ?? "") }
    }

    /// A chart's item ids in order, with its name.
    func chart(storefront: String, type: String, chart: String) throws -> (name: String, ids: [String]) {
        let rows = try database.statement(
            "SELECT name, id FROM charts WHERE storefront = ?1 AND type = ?2 AND chart = ?3 ORDER BY position")
            .rows([storefront, type, chart]) { ($0.string(0) ?? "", $0.string(1) ?? "") }
        return (rows.first?.0 ?? "", rows.map(\.1))
    }

    /// How many tracks an album or playlist has (without loading them). Positions run from 0
    /// without holes, so the last one (one step down the index) gives the count.
    func trackCount(storefront: String, containerType: String, containerID: String) throws -> Int {
        try database.statement("""
            SELECT coalesce(max(position) + 1, 0) FROM container_tracks
            WHERE storefront = ?1 AND container_type = ?2 AND container_id = ?3
            """).rows([storefront, containerType, containerID]) { $0.int(0) }.first ?? 0
    }

    /// Tracks `range` of an album or playlist, whole, in order (a page of a lazy queue); one per
    /// position, so a track missing from the catalog comes back as its identifier.
    func tracks(storefront: String, containerType: String, containerID: String, range: Range<Int>) throws -> [ResourceObject] {
        try database.statement("""
            SELECT r.json, t.type, t.id FROM container_tracks t LEFT JOIN resources r
                ON r.storefront = t.storefront AND r.type = t.type AND r.id = t.id
            WHERE t.storefront = ?1 AND t.container_type = ?2 AND t.container_id = ?3 AND t.position >= ?4 AND t.position < ?5
            ORDER BY t.position
            """).rows([storefront, containerType, containerID, range.lowerBound, range.upperBound]) { row in
            // A track the catalog does not have stays as its identifier: positions stay true.
            row.string(0).flatMap(decode) ?? ResourceObject(id: row.string(2) ?? "", type: row.string(1) ?? "songs")
        }
    }

    /// The storefront a resource lives in (first match), for ids asked without one.
    func storefronts(of type: String, id: String) throws -> [String] {
        try database.statement("SELECT storefront FROM resources WHERE type = ?1 AND id = ?2")
            .rows([type, id]) { $0.string(0) ?? "" }
    }
}
