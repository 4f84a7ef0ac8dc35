import PlatformSupport
import AudioEngine
import CSQLite
import Foundation

// The one wrapper around SQLite (CSQLite: its header). Every sqlite3_* call of the project goes
// through this file. libsqlite3 is opened when the first database is (see DynamicLibrary), not
// linked: loading it at start cost every command ~0.2 ms, `musickit next` included.

/// A failed SQLite call: the operation, the result code and SQLite's message.
/// (Linux addition)
public struct SQLiteError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The C function or the statement that failed.
    public let operation: String
    /// The (extended) SQLite result code.
    public let code: Int32
    public let message: String
    /// The database file.
    public let path: String

    public var description: String { "SQLite \(operation) on \(path) failed: \(message) (\(code))" }

    /// SQLITE_NOTADB or SQLITE_CORRUPT: the file is not a usable database.
    public var isCorruptOrForeign: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT
    }
}

/// A SQLite connection. Statements are prepared once and cached by their text.
///
/// Thread safety: one thread at a time; owners serialize access (the stores keep it behind a
/// mutex). Opened in SQLITE_OPEN_NOMUTEX mode for that reason.
final class SQLiteDatabase {
    let path: String
    fileprivate let sqlite: LibSQLite
    private let handle: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]

    init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        self.path = path
        let sqlite: LibSQLite
        switch LibSQLite.loaded {
        case .success(let library): sqlite = library
        case .failure(let failure):
            throw SQLiteError(operation: "dlopen", code: SQLITE_CANTOPEN, message: failure.description, path: path)
        }
        self.sqlite = sqlite
        var connection: OpaquePointer?
        // Never through a symbolic link: a link planted at a database's name would otherwise
        // have the project's tables written into whatever it points at.
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
            | SQLITE_OPEN_NOFOLLOW
        let result = sqlite.open(path, &connection, flags, nil)
        guard result == SQLITE_OK, let connection else {
            var message = connection.map { String(cString: sqlite.errorMessage($0)) } ?? String(cString: sqlite.errorString(result))
            var status = stat()
            if lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK {
                message = "it is a symbolic link; refusing to open a database through one"
            }
            _ = sqlite.close(connection)
            throw SQLiteError(operation: "sqlite3_open_v2", code: result, message: message, path: path)
        }
        handle = connection
        _ = sqlite.extendedResultCodes(handle, 1)
        _ = sqlite.busyTimeout(handle, 5_000)
    }

    deinit {
        statements.removeAll()
        _ = sqlite.close(handle)
    }

    /// A database that only caches what can be made again (fetched answers, measurements), at
    /// `path`, private to the owner, in WAL mode, with `schema` run on it: a file that is not a
    /// usable database is deleted and made anew rather than reported.
    static func openCache(at path: URL, schema: String) throws -> SQLiteDatabase {
        try PrivateFiles.ensureDirectory(path.deletingLastPathComponent())
        func open() throws -> SQLiteDatabase {
            try PrivateFiles.createPrivateFileIfMissing(path.path)
            let database = try SQLiteDatabase(path: path.path)
            try database.execute("PRAGMA journal_mode=WAL;\n" + schema)
            PrivateFiles.restrictToOwner(path.path, withDatabaseCompanions: true)
            return database
        }
        do {
            return try open()
        } catch let error as SQLiteError where error.isCorruptOrForeign {
            for suffix in ["", "-wal", "-shm"] { unlink(path.path + suffix) }
            return try open()
        }
    }

    private func error(_ operation: String, _ code: Int32) -> SQLiteError {
        SQLiteError(operation: operation, code: code, message: String(cString: sqlite.errorMessage(handle)), path: path)
    }

    /// Runs one or more statements without results.
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite.exec(handle, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite.errorString(result))
            sqlite.free(message)
            throw SQLiteError(operation: String(sql.prefix(60)), code: result, message: text, path: path)
        }
    }

    /// A prepared statement for `sql`, reset and with cleared bindings.
    func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var prepared: OpaquePointer?
        let result = sqlite.prepare(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard result == SQLITE_OK, let prepared else { throw error("prepare \(sql.prefix(60))", result) }
        let statement = SQLiteStatement(handle: prepared, database: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Runs `body` in a transaction (BEGIN IMMEDIATE: writers wait for each other, not fail).
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    var lastInsertRowID: Int64 { sqlite.lastInsertRowID(handle) }
    var changes: Int { Int(sqlite.changes(handle)) }

    fileprivate func check(_ operation: String, _ result: Int32) throws(SQLiteError) {
        if result != SQLITE_OK { throw error(operation, result) }
    }

    fileprivate func stepError(_ sql: String, _ result: Int32) -> SQLiteError {
        error("step \(sql.prefix(60))", result)
    }

    /// The SQLite library version, e.g. "3.40.1" (or why the library could not be opened).
    static var libraryVersion: String {
        switch LibSQLite.loaded {
        case .success(let library): String(cString: library.libraryVersion())
        case .failure(let failure): failure.description
        }
    }
}

/// A prepared statement: bind, then step through rows.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let database: SQLiteDatabase
    /// The database's functions, kept: a statement is finalized from the database's deinit, when
    /// its unowned reference can no longer be read.
    private let sqlite: LibSQLite
    let sql: String

    fileprivate init(handle: OpaquePointer, database: SQLiteDatabase, sql: String) {
        self.handle = handle
        self.database = database
        sqlite = database.sqlite
        self.sql = sql
    }

    deinit { _ = sqlite.finalize(handle) }

    func reset() {
        _ = sqlite.reset(handle)
        _ = sqlite.clearBindings(handle)
    }

    /// Resets the statement and binds values to ?1, ?2, ... in order.
    /// Supported: String, Int, Int64, Double, Bool, Data, nil.
    @discardableResult
    func bind(_ values: [(any Sendable)?]) throws(SQLiteError) -> SQLiteStatement {
        reset()
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case nil: result = sqlite.bindNull(handle, index)
            case let text as String:
                result = text.withCString { sqlite.bindText(handle, index, $0, -1, LibSQLite.transient) }
            case let number as Int: result = sqlite.bindInt64(handle, index, Int64(number))
            case let number as Int64: result = sqlite.bindInt64(handle, index, number)
            case let number as Double: result = sqlite.bindDouble(handle, index, number)
            case let flag as Bool: result = sqlite.bindInt64(handle, index, flag ? 1 : 0)
            case let data as Data:
                result = data.withUnsafeBytes {
                    sqlite.bindBlob(handle, index, $0.baseAddress, Int32($0.count), LibSQLite.transient)
                }
            default:
                throw SQLiteError(operation: "bind", code: SQLITE_MISUSE,
                                  message: "cannot bind a \(type(of: value!))", path: database.path)
            }
            try database.check("bind ?\(index) of \(sql.prefix(40))", result)
        }
        return self
    }

    /// Advances to the next row; false when done.
    func step() throws(SQLiteError) -> Bool {
        let result = sqlite.step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.stepError(sql, result)
        }
    }

    /// Runs the statement to completion (for writes).
    func run(_ values: [(any Sendable)?] = []) throws(SQLiteError) {
        try bind(values)
        while try step() {}
    }

    /// Collects every row through `row`.
    func rows<T>(_ values: [(any Sendable)?] = [], _ row: (SQLiteStatement) throws -> T) throws -> [T] {
        try bind(values)
        var results: [T] = []
        while try step() { results.append(try row(self)) }
        return results
    }

    /// Reads rows through `row` until it returns false or the rows end.
    func forEachRow(_ values: [(any Sendable)?] = [], _ row: (SQLiteStatement) throws -> Bool) throws {
        try bind(values)
        while try step() {
            if try !row(self) { break }
        }
    }

    func isNull(_ column: Int32) -> Bool { sqlite.columnType(handle, column) == SQLITE_NULL }

    func int(_ column: Int32) -> Int { Int(sqlite.columnInt64(handle, column)) }

    func double(_ column: Int32) -> Double { sqlite.columnDouble(handle, column) }

    /// The column's number, nil for NULL.
    func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }

    func string(_ column: Int32) -> String? {
        guard let text = sqlite.columnText(handle, column) else { return nil }
        return String(cString: text)
    }

    func data(_ column: Int32) -> Data {
        let count = Int(sqlite.columnBytes(handle, column))
        guard count > 0, let bytes = sqlite.columnBlob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }
}

/// libsqlite3's functions that this file calls, looked up once when the first database opens.
private struct LibSQLite: @unchecked Sendable {
    // @unchecked: C function pointers, immutable.
    typealias Connection = OpaquePointer
    typealias Statement = OpaquePointer
    let open: @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<Connection?>?, Int32, UnsafePointer<CChar>?) -> Int32
    let close: @convention(c) (Connection?) -> Int32
    let errorMessage: @convention(c) (Connection?) -> UnsafePointer<CChar>
    let errorString: @convention(c) (Int32) -> UnsafePointer<CChar>
    let extendedResultCodes: @convention(c) (Connection?, Int32) -> Int32
    let busyTimeout: @convention(c) (Connection?, Int32) -> Int32
    let exec: @convention(c) (Connection?, UnsafePointer<CChar>?, sqlite3_callback?, UnsafeMutableRawPointer?,
                              UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32
    let free: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let prepare: @convention(c) (Connection?, UnsafePointer<CChar>?, Int32, UInt32, UnsafeMutablePointer<Statement?>?,
                                 UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> Int32
    let lastInsertRowID: @convention(c) (Connection?) -> sqlite3_int64
    let changes: @convention(c) (Connection?) -> Int32
    let libraryVersion: @convention(c) () -> UnsafePointer<CChar>
    let finalize: @convention(c) (Statement?) -> Int32
    let reset: @convention(c) (Statement?) -> Int32
    let clearBindings: @convention(c) (Statement?) -> Int32
    let bindNull: @convention(c) (Statement?, Int32) -> Int32
    let bindText: @convention(c) (Statement?, Int32, UnsafePointer<CChar>?, Int32, sqlite3_destructor_type?) -> Int32
    let bindBlob: @convention(c) (Statement?, Int32, UnsafeRawPointer?, Int32, sqlite3_destructor_type?) -> Int32
    let bindInt64: @convention(c) (Statement?, Int32, sqlite3_int64) -> Int32
    let bindDouble: @convention(c) (Statement?, Int32, Double) -> Int32
    let step: @convention(c) (Statement?) -> Int32
    let columnType: @convention(c) (Statement?, Int32) -> Int32
    let columnInt64: @convention(c) (Statement?, Int32) -> sqlite3_int64
    let columnDouble: @convention(c) (Statement?, Int32) -> Double
    let columnText: @convention(c) (Statement?, Int32) -> UnsafePointer<UInt8>?
    let columnBytes: @convention(c) (Statement?, Int32) -> Int32
    let columnBlob: @convention(c) (Statement?, Int32) -> UnsafeRawPointer?

    /// SQLITE_TRANSIENT (a macro Swift cannot import): SQLite copies the bound bytes.
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    static let loaded: Result<LibSQLite, DynamicLibrary.Failure> =
        DynamicLibrary.table("libsqlite3.so.0") { function throws(DynamicLibrary.Failure) in
            LibSQLite(
                open: try function("sqlite3_open_v2"), close: try function("sqlite3_close_v2"),
                errorMessage: try function("sqlite3_errmsg"), errorString: try function("sqlite3_errstr"),
                extendedResultCodes: try function("sqlite3_extended_result_codes"),
                busyTimeout: try function("sqlite3_busy_timeout"), exec: try function("sqlite3_exec"),
                free: try function("sqlite3_free"), prepare: try function("sqlite3_prepare_v3"),
                lastInsertRowID: try function("sqlite3_last_insert_rowid"), changes: try function("sqlite3_changes"),
                libraryVersion: try function("sqlite3_libversion"), finalize: try function("sqlite3_finalize"),
                reset: try function("sqlite3_reset"), clearBindings: try function("sqlite3_clear_bindings"),
                bindNull: try function("sqlite3_bind_null"), bindText: try function("sqlite3_bind_text"),
                bindBlob: try function("sqlite3_bind_blob"), bindInt64: try function("sqlite3_bind_int64"),
                bindDouble: try function("sqlite3_bind_double"), step: try function("sqlite3_step"),
                columnType: try function("sqlite3_column_type"), columnInt64: try function("sqlite3_column_int64"),
                columnDouble: try function("sqlite3_column_double"), columnText: try function("sqlite3_column_text"),
                columnBytes: try function("sqlite3_column_bytes"), columnBlob: try function("sqlite3_column_blob"))
        }
}
