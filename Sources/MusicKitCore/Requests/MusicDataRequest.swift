import AudioEngine
import Foundation

/// A request to any Apple Music API endpoint, with the developer token (and, for `/v1/me`
/// endpoints, the user token) added. The answer's body is left for the app to decode.
///
/// Its `init(urlRequest:)` and `urlRequest`, which name Foundation's `URLRequest`, are the
/// `MusicKit` module's (Sources/MusicKit): this module does not link FoundationNetworking (see
/// HTTPMessages.swift), so it keeps what is sent as an `HTTPRequest`, and the app's own
/// `URLRequest` as it was given. MusicKit's own requests to the API skip the struct:
/// `response(to:)`.
public struct MusicDataRequest: Hashable, Sendable, CustomStringConvertible {
    /// What `response()` sends (before the tokens are added).
    package let httpRequest: HTTPRequest
    /// The app's `URLRequest`, kept whole for `urlRequest`.
    package let appRequest: AppRequest

    package init(httpRequest: HTTPRequest, appRequest: AppRequest) {
        self.httpRequest = httpRequest
        self.appRequest = appRequest
    }

    /// A value of a type this module cannot name (Foundation's `URLRequest`), compared and
    /// hashed as itself. @unchecked: only a Sendable value is ever put in (the initializer).
    package struct AppRequest: Hashable, @unchecked Sendable {
        package let value: AnyHashable

        package init<Value: Hashable & Sendable>(_ value: Value) {
            self.value = AnyHashable(value)
        }
    }

    /// Where the tokens come from; `DefaultMusicTokenProvider` unless an app sets its own (as on
    /// Apple platforms, at start-up: it is not guarded against being set while requests run).
    nonisolated(unsafe) public static var tokenProvider: any MusicUserTokenProvider & MusicDeveloperTokenProvider
        = DefaultMusicTokenProvider()

    /// The Apple Music API's address (`MUSICKIT_API_BASE_URL`, for a local server; Linux addition).
    static var baseURL: URL { configuredBaseURL ?? URL(string: "https://api.music.apple.com")! }

    private static var configuredBaseURL: URL? {
        ProcessEnvironment.nonEmpty("MUSICKIT_API_BASE_URL").flatMap { URL(string: $0) }
    }

    /// `url`, sent to `MUSICKIT_API_BASE_URL` instead when it names the Apple Music API and
    /// another address is configured: code written for Apple platforms (which spells out
    /// `https://api.music.apple.com/v1/…`) then runs against a local server unchanged.
    static func routed(_ url: URL) -> URL {
        guard let base = configuredBaseURL, url.host?.lowercased() == "api.music.apple.com",
              var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let target = URLComponents(url: base, resolvingAgainstBaseURL: true) else { return url }
        components.scheme = target.scheme
        components.host = target.host
        components.port = target.port
        return components.url ?? url
    }

    /// The two-letter code of the user's storefront: from the Apple Music API (`/v1/me/storefront`)
    /// when a user token is available, otherwise the local account's storefront.
    public static var currentCountryCode: String {
        get async throws {
            let provider = tokenProvider
            let developerToken = try? await provider.developerToken(options: [])
            if let developerToken, (try? await provider.userToken(for: developerToken, options: [])) != nil {
                let url = baseURL.appendingPathComponent("v1/me/storefront")
                let response = try await MusicDataRequest.response(to: HTTPRequest(url: url))
                guard let storefront = (try? JSONValue.parse(response.data))?["data"]?.array?.first?["id"]?.string else {
                    throw MusicDataRequest.Error(status: response.httpResponse.statusCode, code: 0,
                                                 title: "Unexpected response", detailText: "no storefront in the answer of \(url)",
                                                 id: "", source: nil, originalResponse: response)
                }
                return storefront
            }
            return AccountStore.load().account.storefront
        }
    }

    /// Sends the request and returns the answer; a status other than 2xx throws
    /// `MusicDataRequest.Error` (from the API's `errors` body), a failed transfer `URLError`.
    /// `429` and `5xx` answers are tried again a few times first (see `RetryPolicy`).
    public func response() async throws -> MusicDataResponse {
        try await Self.response(to: httpRequest)
    }

    /// `response()` for `request`: what MusicKit sends the API itself (the catalog, the storefront).
    package static func response(to request: HTTPRequest) async throws -> MusicDataResponse {
        var request = request
        request.url = request.url.map(MusicDataRequest.routed)
        let provider = MusicDataRequest.tokenProvider
        if request.value(forHTTPHeaderField: "Authorization") == nil {
            let developerToken = try await provider.developerToken(options: [])
            request.setValue("Bearer \(developerToken)", forHTTPHeaderField: "Authorization")
            if request.value(forHTTPHeaderField: "Music-User-Token") == nil, request.url?.path.hasPrefix("/v1/me") == true {
                let userToken = try await provider.userToken(for: developerToken, options: [])
                request.setValue(userToken, forHTTPHeaderField: "Music-User-Token")
            }
        }
        let policy = MusicDataRequest.retryPolicy
        var attempt = 0
        while true {
            let (data, httpResponse) = try await HTTPClient.data(for: request)
            let response = MusicDataResponse(data: data, httpResponse: httpResponse)
            if (200..<300).contains(httpResponse.statusCode) { return response }
            guard let delay = policy.delay(before: attempt + 1, after: httpResponse, method: request.httpMethod ?? "GET") else {
                throw Error(response: response)
            }
            attempt += 1
            try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))  // at most longestWait: RetryPolicy.delay
        }
    }

    /// How `response()` retries an answer that may succeed later. (Tests shorten the waits.)
    nonisolated(unsafe) static var retryPolicy = RetryPolicy()

    public var description: String {
        "MusicDataRequest(urlRequest: \(httpRequest))"
    }
}

extension MusicDataRequest {
    /// Which failed answers are tried again, and after how long: `429 Too Many Requests` after
    /// its `Retry-After` (seconds or an HTTP date; when it asks for longer than `longestWait`,
    /// the error is thrown at once), and `5xx` answers to requests that can safely be sent twice
    /// (GET, HEAD, PUT, DELETE) after an exponential backoff (0.5, 1, 2 s); at most `retries`
    /// times. Other answers (4xx: a bad request or a rejected token) are never retried.
    struct RetryPolicy: Sendable {
        var retries = 3
        var firstBackoff: TimeInterval = 0.5
        var longestWait: TimeInterval = 30

        /// The wait before retry number `retry` (from 1) after `response`, nil for no retry.
        func delay(before retry: Int, after response: HTTPResponse, method: String) -> TimeInterval? {
            guard retry <= retries else { return nil }
            let backoff = firstBackoff * Double(1 << (retry - 1))
            switch response.statusCode {
            case 429:
                guard let header = response.value(forHTTPHeaderField: "Retry-After"),
                      let asked = Self.seconds(retryAfter: header) else { return backoff }
                return asked <= longestWait ? asked : nil
            case 500..<600:
                return ["GET", "HEAD", "PUT", "DELETE"].contains(method.uppercased()) ? backoff : nil
            default:
                return nil
            }
        }

        /// `Retry-After` as seconds from now: a number of seconds or an HTTP date.
        static func seconds(retryAfter value: String, now: Date = Date()) -> TimeInterval? {
            let text = value.trimmingCharacters(in: .whitespaces)
            // Digits only (RFC 9110); a number too large for an Int is a wait longer than any.
            if !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) { return Int(text).map { TimeInterval($0) } ?? .infinity }
            return HTTPClient.date(text).map { max($0.timeIntervalSince(now), 0) }
        }
    }

    /// An error the Apple Music API answered with: its first entry of `errors`, and the answer.
    public struct Error: Swift.Error, Equatable, Hashable, Sendable, CustomStringConvertible, LocalizedError {
        /// Where in the request the error is (Apple Music API: `source`).
        public enum Source: Equatable, Hashable, Sendable, CustomStringConvertible {
            /// A query parameter.
            case parameter(String)

            public var description: String {
                switch self { case .parameter(let name): "parameter(\(name))" }
            }
        }

        /// The HTTP status.
        public let status: Int
        /// The Apple Music API's error code (e.g. 40400), 0 when the answer had none.
        public let code: Int
        public let title: String
        public let detailText: String
        public let id: String
        public let source: Source?
        public let originalResponse: MusicDataResponse

        init(status: Int, code: Int, title: String, detailText: String, id: String, source: Source?,
             originalResponse: MusicDataResponse) {
            self.status = status
            self.code = code
            self.title = title
            self.detailText = detailText
            self.id = id
            self.source = source
            self.originalResponse = originalResponse
        }

        /// From an answer whose status is not 2xx: the body's first error, or the status alone.
        init(response: MusicDataResponse) {
            let status = response.httpResponse.statusCode
            let first = (try? JSONValue.parse(response.data))?["errors"]?.array?.first
            self.init(status: first?["status"]?.string.flatMap { Int($0) } ?? status,
                      code: first?["code"]?.string.flatMap { Int($0) } ?? first?["code"]?.int ?? 0,
                      title: first?["title"]?.string ?? HTTPResponse.localizedString(forStatusCode: status).capitalized,
                      detailText: first?["detail"]?.string ?? "",
                      id: first?["id"]?.string ?? "",
                      source: first?["source"]?["parameter"]?.string.map(Source.parameter),
                      originalResponse: response)
        }

        public var description: String {
            var text = "MusicDataRequest.Error(status: \(status), code: \(code), title: \"\(title)\""
            if !detailText.isEmpty { text += ", detailText: \"\(detailText)\"" }
            if !id.isEmpty { text += ", id: \(id)" }
            if let source { text += ", source: \(source)" }
            return text + ")"
        }

        /// The API's words, and for a rejected token or a rate limit what it means here.
        public var errorDescription: String? {
            let stated = detailText.isEmpty ? "\(title) (HTTP \(status))" : "\(title): \(detailText) (HTTP \(status))"
            let personal = originalResponse.httpResponse.url.path.hasPrefix("/v1/me") == true
            switch status {
            case 401:
                return "the developer token was rejected: \(stated); check MUSICKIT_DEVELOPER_TOKEN (it may have expired) "
                    + "or the key, MUSICKIT_KEY_ID and MUSICKIT_TEAM_ID it is signed with"
            case 403 where personal:
                return "the music user token was rejected: \(stated); set a current MUSICKIT_USER_TOKEN"
            case 403:
                return "the developer token was rejected: \(stated); the key may not be enabled for MusicKit (developer.apple.com, Keys)"
            case 429:
                let wait = originalResponse.httpResponse.value(forHTTPHeaderField: "Retry-After")
                    .flatMap { RetryPolicy.seconds(retryAfter: $0) }.map { $0.isFinite ? "; try again in \($0.clampedInt(.up)) s" : "; try again much later" } ?? ""
                return "the Apple Music API is limiting requests: \(stated)\(wait)"
            default:
                return stated
            }
        }
    }
}

/// The answer to a `MusicDataRequest`: the body as received and the HTTP response. Its
/// `urlResponse` (Foundation's `HTTPURLResponse`) is the `MusicKit` module's, made from
/// `httpResponse`.
public struct MusicDataResponse: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let data: Data
    /// The response's status and header fields, as HTTPClient read them.
    package let httpResponse: HTTPResponse

    package init(data: Data, httpResponse: HTTPResponse) {
        self.data = data
        self.httpResponse = httpResponse
    }

    public var description: String {
        "MusicDataResponse(data: \(data.count) bytes, urlResponse: \(httpResponse.statusCode))"
    }

    public var debugDescription: String {
        "MusicDataResponse(urlResponse: \(httpResponse), data: \(String(decoding: data.prefix(4_096), as: UTF8.self)))"
    }
}
