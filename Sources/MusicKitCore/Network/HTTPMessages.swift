import Foundation

// The HTTP request and response the engine's own client (HTTPClient) sends and reads. They are
// not Foundation's `URLRequest` and `HTTPURLResponse`: on Linux those live in FoundationNetworking,
// which links libcurl and ~25 more libraries into every program that uses it, and the CLI and
// musickitd, which link only this module, are timed from their start. The `MusicKit` module,
// which apps import, gives `MusicDataRequest` and `MusicDataResponse` Foundation's types over
// these (Sources/MusicKit/FoundationNetworkingTypes.swift).

/// An HTTP request as HTTPClient sends it: the members of Foundation's URLRequest it honours.
package struct HTTPRequest: Hashable, Sendable, CustomStringConvertible {
    package var url: URL?
    /// Seconds without progress (connecting, sending, or between bytes received) before the
    /// request fails with `URLError.timedOut`.
    package var timeoutInterval: TimeInterval
    /// "GET" unless set.
    package var httpMethod: String? {
        get { method }
        set { method = newValue?.uppercased() ?? "GET" }
    }
    package var allHTTPHeaderFields: [String: String]?
    package var httpBody: Data?
    private var method = "GET"

    package init(url: URL?, timeoutInterval: TimeInterval = 60) {
        self.url = url
        self.timeoutInterval = timeoutInterval
    }

    /// The value of a header field (names compare case-insensitively).
    package func value(forHTTPHeaderField field: String) -> String? {
        allHTTPHeaderFields?.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }

    /// Sets (or, with nil, removes) a header field.
    package mutating func setValue(_ value: String?, forHTTPHeaderField field: String) {
        var fields = allHTTPHeaderFields ?? [:]
        for key in fields.keys where key.caseInsensitiveCompare(field) == .orderedSame { fields[key] = nil }
        if let value { fields[field] = value }
        allHTTPHeaderFields = fields
    }


    package var description: String { "\(method) \(url?.absoluteString ?? "(no URL)")" }
}

/// The head of an HTTP response as HTTPClient reads it: status code and header fields.
package struct HTTPResponse: Hashable, Sendable, CustomStringConvertible {
    package let url: URL
    package let statusCode: Int
    /// Header fields as received (names as the server wrote them).
    package let headerFields: [String: String]

    package init?(url: URL, statusCode: Int, headerFields: [String: String]?) {
        guard (100...999).contains(statusCode) else { return nil }
        self.url = url
        self.statusCode = statusCode
        self.headerFields = headerFields ?? [:]
    }

    /// The value of a header field (names compare case-insensitively).
    package func value(forHTTPHeaderField field: String) -> String? {
        headerFields.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }


    /// The body's length as the server declared it; -1 when it did not.
    package var expectedContentLength: Int64 {
        value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? -1
    }

    /// The standard reason phrase of a status code, e.g. "not found" for 404.
    package static func localizedString(forStatusCode statusCode: Int) -> String {
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

    package var description: String {
        "\(statusCode) \(HTTPResponse.localizedString(forStatusCode: statusCode)) \(url.absoluteString)"
    }
}
