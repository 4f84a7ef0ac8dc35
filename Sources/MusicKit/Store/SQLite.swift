import CSQLite
import Foundation

// The one wrapper around SQLite (CSQLite). Every sqlite3_* call of the project goes through this file.

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
    private let handle: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]

    init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        self.path = path
        var connection: OpaquePointer?
        // Never through a symbolic link: a link planted at a database's name would otherwise
        // have the project's tables written into whatever it points at.
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
            | SQLITE_OPEN_NOFOLLOW
        let result = sqlite3_open_v2(path, &connection, flags, nil)
        guard result == SQLITE_OK, let connection else {
            var message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
            var status = stat()
            if lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK {
                message = "it is a symbolic link; refusing to open a database through one"
            }
            sqlite3_close_v2(connection)
            throw SQLiteError(operation: "sqlite3_open_v2", code: result, message: message, path: path)
        }
        handle = connection
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, 5_000)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    private func error(_ operation: String, _ code: Int32) -> SQLiteError {
        SQLiteError(operation: operation, code: code, message: String(cString: sqlite3_errmsg(handle)), path: path)
    }

    /// Runs one or more statements without results.
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_free(message)
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
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
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

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var changes: Int { Int(sqlite3_changes(handle)) }

    fileprivate func check(_ operation: String, _ result: Int32) throws(SQLiteError) {
        if result != SQLITE_OK { throw error(operation, result) }
    }

    fileprivate func stepError(_ sql: String, _ result: Int32) -> SQLiteError {
        error("step \(sql.prefix(60))", result)
    }

    /// The SQLite library version, e.g. "3.40.1".
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}

/// A prepared statement: bind, then step through rows.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let database: SQLiteDatabase
    let sql: String

    fileprivate init(handle: OpaquePointer, database: SQLiteDatabase, sql: String) {
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
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
            case nil: result = sqlite3_bind_null(handle, index)
            case let text as String:
                result = text.withCString { musickit_sqlite3_bind_text_transient(handle, index, $0, -1) }
            case let number as Int: result = sqlite3_bind_int64(handle, index, Int64(number))
            case let number as Int64: result = sqlite3_bind_int64(handle, index, number)
            case let number as Double: result = sqlite3_bind_double(handle, index, number)
            case let flag as Bool: result = sqlite3_bind_int64(handle, index, flag ? 1 : 0)
            case let data as Data:
                result = data.withUnsafeBytes {
                    musickit_sqlite3_bind_blob_transient(handle, index, $0.baseAddress, Int32($0.count))
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
        let result = sqlite3_step(handle)
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

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }

    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    func string(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: text)
    }

    func data(_ column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }
}
