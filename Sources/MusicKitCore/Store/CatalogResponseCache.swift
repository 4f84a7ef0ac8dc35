import Foundation
import Glibc
import Synchronization

/// The Apple Music API's catalog answers kept on disk (`<data>/catalog-cache.sqlite`), each with
/// how long it is fresh, so that a request made again is answered without the network while
/// fresh, and from the stale copy when the network cannot be reached.
///
/// A file of its own beside `catalog.sqlite`: that one is rebuilt from the catalog documents
/// whenever they change, which must not drop what was fetched. Bounded: at most `maximumEntries`
/// answers; the least recently fetched go first.
///
/// Thread safety: any thread; the connection is behind a mutex.
final class CatalogResponseCache: Sendable {
    struct Entry: Sendable {
        let body: Data
        let fetched: Date
        let freshUntil: Date
    }

    static let fileName = "catalog-cache.sqlite"
    static let maximumEntries = 20_000
    /// How long an answer is fresh when the server says nothing (`Cache-Control`, `Expires`).
    static let defaultFreshness: TimeInterval = 3_600

    let path: URL
    private let database: Mutex<SQLiteDatabase>

    private static let caches = Mutex<[URL: CatalogResponseCache]>([:])

    /// The cache of `environment`'s data folder (one per folder and process).
    static func open(_ environment: MusicKitEnvironment) throws -> CatalogResponseCache {
        let path = environment.dataDirectory.appendingPathComponent(fileName)
        return try caches.withLock { caches in
            if let cache = caches[path] { return cache }
            let cache = try CatalogResponseCache(path: path)
            caches[path] = cache
            return cache
        }
    }

    /// Opens (or creates) the cache; a file that is not a usable database is only a cache:
    /// it is replaced.
    private init(path: URL) throws {
        self.path = path
        database = Mutex(try SQLiteDatabase.openCache(at: path, schema: """
            CREATE TABLE IF NOT EXISTS responses(url TEXT PRIMARY KEY, body BLOB NOT NULL, fetched REAL NOT NULL,
                                                 fresh_until REAL NOT NULL);
            CREATE INDEX IF NOT EXISTS responses_by_fetched ON responses(fetched);
            """))
    }

    func entry(for url: URL) throws -> Entry? {
        try database.withLock { database in
            try database.statement("SELECT body, fetched, fresh_until FROM responses WHERE url = ?").rows([url.absoluteString]) {
                Entry(body: $0.data(0), fetched: Date(timeIntervalSince1970: $0.double(1)),
                      freshUntil: Date(timeIntervalSince1970: $0.double(2)))
            }.first
        }
    }

    func store(_ entry: Entry, for url: URL) throws {
        try database.withLock { database in
            try database.transaction {
                try database.statement("INSERT OR REPLACE INTO responses(url, body, fetched, fresh_until) VALUES (?, ?, ?, ?)")
                    .run([url.absoluteString, entry.body, entry.fetched.timeIntervalSince1970, entry.freshUntil.timeIntervalSince1970])
                try database.statement("""
                    DELETE FROM responses WHERE url IN
                      (SELECT url FROM responses ORDER BY fetched DESC LIMIT -1 OFFSET \(CatalogResponseCache.maximumEntries))
                    """).run()
            }
        }
    }

    /// How many answers are kept, and their bytes.
    func summary() throws -> (entries: Int, bytes: Int) {
        try database.withLock { database in
            try database.statement("SELECT count(*), coalesce(sum(length(body)), 0) FROM responses").rows { ($0.int(0), $0.int(1)) }.first ?? (0, 0)
        }
    }

    /// Until when an answer is fresh, from its `Cache-Control` (`max-age`, `no-cache`) or
    /// `Expires`; nil when it must not be stored (`no-store`).
    static func freshUntil(_ response: HTTPResponse, fetched: Date) -> Date? {
        if let control = response.value(forHTTPHeaderField: "Cache-Control")?.lowercased() {
            let directives = control.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if directives.contains("no-store") { return nil }
            if directives.contains("no-cache") { return fetched }
            if let maxAge = directives.first(where: { $0.hasPrefix("max-age=") }).flatMap({ TimeInterval($0.dropFirst(8)) }) {
                return fetched.addingTimeInterval(max(maxAge, 0))
            }
        }
        if let expires = response.value(forHTTPHeaderField: "Expires") {
            // An unreadable date (such as "0") means already expired.
            return HTTPClient.date(expires) ?? fetched
        }
        return fetched.addingTimeInterval(defaultFreshness)
    }
}
