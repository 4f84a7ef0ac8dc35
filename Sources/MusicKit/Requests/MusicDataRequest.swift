import Foundation

/// A request to any Apple Music API endpoint, with the developer token (and, for `/v1/me`
/// endpoints, the user token) added. The answer's body is left for the app to decode.
public struct MusicDataRequest: Hashable, Sendable, CustomStringConvertible {
    public let urlRequest: URLRequest

    public init(urlRequest: URLRequest) {
        self.urlRequest = urlRequest
    }

    /// Where the tokens come from; `DefaultMusicTokenProvider` unless an app sets its own (as on
    /// Apple platforms, at start-up: it is not guarded against being set while requests run).
    nonisolated(unsafe) public static var tokenProvider: any MusicUserTokenProvider & MusicDeveloperTokenProvider
        = DefaultMusicTokenProvider()

    /// The Apple Music API's address (`MUSICKIT_API_BASE_URL`, for a local server; Linux addition).
    static var baseURL: URL {
        ProcessInfo.processInfo.environment["MUSICKIT_API_BASE_URL"].flatMap { $0.isEmpty ? nil : URL(string: $0) }
            ?? URL(string: "https://api.music.apple.com")!
    }

    /// The two-letter code of the user's storefront: from the Apple Music API (`/v1/me/storefront`)
    /// when a user token is available, otherwise the local account's storefront.
    public static var currentCountryCode: String {
        get async throws {
            let provider = tokenProvider
            let developerToken = try? await provider.developerToken(options: [])
            if let developerToken, (try? await provider.userToken(for: developerToken, options: [])) != nil {
                let url = baseURL.appendingPathComponent("v1/me/storefront")
                let response = try await MusicDataRequest(urlRequest: URLRequest(url: url)).response()
                guard let storefront = (try? JSONValue.parse(response.data))?["data"]?.array?.first?["id"]?.string else {
                    throw MusicDataRequest.Error(status: response.urlResponse.statusCode, code: 0,
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
    public func response() async throws -> MusicDataResponse {
        var request = urlRequest
        let provider = MusicDataRequest.tokenProvider
        if request.value(forHTTPHeaderField: "Authorization") == nil {
            let developerToken = try await provider.developerToken(options: [])
            request.setValue("Bearer \(developerToken)", forHTTPHeaderField: "Authorization")
            if request.value(forHTTPHeaderField: "Music-User-Token") == nil, request.url?.path.hasPrefix("/v1/me") == true {
                let userToken = try await provider.userToken(for: developerToken, options: [])
                request.setValue(userToken, forHTTPHeaderField: "Music-User-Token")
            }
        }
        let (data, urlResponse) = try await HTTPClient.data(for: request)
        let response = MusicDataResponse(data: data, urlResponse: urlResponse)
        guard (200..<300).contains(urlResponse.statusCode) else { throw Error(response: response) }
        return response
    }

    public var description: String {
        "MusicDataRequest(urlRequest: \(urlRequest))"
    }
}

extension MusicDataRequest {
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
            let status = response.urlResponse.statusCode
            let first = (try? JSONValue.parse(response.data))?["errors"]?.array?.first
            self.init(status: first?["status"]?.string.flatMap { Int($0) } ?? status,
                      code: first?["code"]?.string.flatMap { Int($0) } ?? first?["code"]?.int ?? 0,
                      title: first?["title"]?.string ?? HTTPURLResponse.localizedString(forStatusCode: status).capitalized,
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

        public var errorDescription: String? {
            detailText.isEmpty ? "\(title) (HTTP \(status))" : "\(title): \(detailText) (HTTP \(status))"
        }
    }
}

/// The answer to a `MusicDataRequest`: the body as received and the HTTP response.
public struct MusicDataResponse: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let data: Data
    public let urlResponse: HTTPURLResponse

    init(data: Data, urlResponse: HTTPURLResponse) {
        self.data = data
        self.urlResponse = urlResponse
    }

    public var description: String {
        "MusicDataResponse(data: \(data.count) bytes, urlResponse: \(urlResponse.statusCode))"
    }

    public var debugDescription: String {
        "MusicDataResponse(urlResponse: \(urlResponse), data: \(String(decoding: data.prefix(4_096), as: UTF8.self)))"
    }
}
