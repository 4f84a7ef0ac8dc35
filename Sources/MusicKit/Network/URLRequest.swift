import Foundation

// `URLRequest` and `HTTPURLResponse`, the two types of Apple's URL loading system that
// `MusicDataRequest` and `MusicDataResponse` name. On Apple platforms they come with
// Foundation; on Linux they live in FoundationNetworking, which links libcurl and ~25 more
// libraries into every program that uses MusicKit: a program's start went from 1.5 to 7.2 ms
// (measured with a static build), and the CLI's `musickit play` and `musickit next` are
// measured from their start. So MusicKit defines them, with the members apps use, and sends
// requests itself (HTTPClient, TLS through OpenSSL opened when first needed). Code written for
// Apple platforms that says `URLRequest(url:)` compiles unchanged; a file that also imports
// FoundationNetworking must write `MusicKit.URLRequest`. (Linux addition)

/// A URL request: what `MusicDataRequest(urlRequest:)` sends (Apple: Foundation's URLRequest).
/// (Linux addition)
public struct URLRequest: Hashable, Sendable, CustomStringConvertible {
    /// How a request may use cached answers (MusicKit's requests always load).
    public enum CachePolicy: UInt, Sendable {
        case useProtocolCachePolicy = 0
        case reloadIgnoringLocalCacheData = 1
        case returnCacheDataElseLoad = 2
        case returnCacheDataDontLoad = 3
    }

    public var url: URL?
    public var cachePolicy: CachePolicy
    /// Seconds without progress (connecting, sending, or between bytes received) before the
    /// request fails with `URLError.timedOut`.
    public var timeoutInterval: TimeInterval
    /// "GET" unless set.
    public var httpMethod: String? {
        get { method }
        set { method = newValue?.uppercased() ?? "GET" }
    }
    public var allHTTPHeaderFields: [String: String]?
    public var httpBody: Data?
    private var method = "GET"

    public init(url: URL, cachePolicy: CachePolicy = .useProtocolCachePolicy, timeoutInterval: TimeInterval = 60) {
        self.url = url
        self.cachePolicy = cachePolicy
        self.timeoutInterval = timeoutInterval
    }

    /// The value of a header field (names compare case-insensitively).
    public func value(forHTTPHeaderField field: String) -> String? {
        allHTTPHeaderFields?.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }

    /// Sets (or, with nil, removes) a header field.
    public mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        var fields = allHTTPHeaderFields ?? [:]
        for key in fields.keys where key.caseInsensitiveCompare(field) == .orderedSame { fields[key] = nil }
        if let value { fields[field] = value }
        allHTTPHeaderFields = fields
    }

    /// Adds a value to a header field (comma-separated after the ones it has).
    public mutating func addValue(_ value: String, forHTTPHeaderField field: String) {
        setValue(self.value(forHTTPHeaderField: field).map { "\($0),\(value)" } ?? value, forHTTPHeaderField: field)
    }

    public var description: String { "\(method) \(url?.absoluteString ?? "(no URL)")" }
}

/// The response to an HTTP request: status code and header fields (Apple: Foundation's
/// HTTPURLResponse). (Linux addition)
public final class HTTPURLResponse: Hashable, CustomStringConvertible, @unchecked Sendable {
    // @unchecked: immutable after init.
    public let url: URL?
    public let statusCode: Int
    /// Header fields as received (names as the server wrote them).
    public let allHeaderFields: [AnyHashable: Any]
    private let fields: [String: String]

    public init?(url: URL, statusCode: Int, httpVersion: String?, headerFields: [String: String]?) {
        guard (100...999).contains(statusCode) else { return nil }
        self.url = url
        self.statusCode = statusCode
        fields = headerFields ?? [:]
        allHeaderFields = Dictionary(uniqueKeysWithValues: fields.map { (AnyHashable($0.key), $0.value as Any) })
    }

    /// The value of a header field (names compare case-insensitively).
    public func value(forHTTPHeaderField field: String) -> String? {
        fields.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }

    /// The type of the body, e.g. "application/json", without its parameters.
    public var mimeType: String? {
        value(forHTTPHeaderField: "Content-Type")?.split(separator: ";").first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    /// The body's length as the server declared it; -1 when it did not.
    public var expectedContentLength: Int64 {
        value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? -1
    }

    /// The standard reason phrase of a status code, e.g. "not found" for 404.
    public static func localizedString(forStatusCode statusCode: Int) -> String {
        switch statusCode {
        case 200: "no error"
        case 201: "created"
        case 202: "accepted"
        case 204: "no content"
        case 301: "moved permanently"
        case 302: "found"
        case 304: "not modified"
        case 400: "bad request"
        case 401: "unauthorized"
        case 403: "forbidden"
        case 404: "not found"
        case 405: "method not allowed"
        case 408: "request timed out"
        case 409: "conflict"
        case 413: "request too large"
        case 429: "too many requests"
        case 500: "internal server error"
        case 501: "unimplemented"
        case 502: "bad gateway"
        case 503: "service unavailable"
        case 504: "gateway timed out"
        default:
            switch statusCode {
            case 100..<200: "informational"
            case 200..<300: "success"
            case 300..<400: "redirected"
            case 400..<500: "client error"
            default: "server error"
            }
        }
    }

    public static func == (lhs: HTTPURLResponse, rhs: HTTPURLResponse) -> Bool {
        lhs.url == rhs.url && lhs.statusCode == rhs.statusCode && lhs.fields == rhs.fields
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(statusCode)
        hasher.combine(fields)
    }

    public var description: String {
        "\(statusCode) \(HTTPURLResponse.localizedString(forStatusCode: statusCode)) \(url?.absoluteString ?? "")"
    }
}
