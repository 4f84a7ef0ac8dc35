import Foundation

/// Where a catalog answer came from. (Linux addition)
public enum MusicCatalogAnswerSource: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The embedded SQLite catalog (the bundled and imported catalog documents).
    case embeddedCatalog
    /// The Apple Music API, just now.
    case appleMusicAPI
    /// The Apple Music API's answer kept in the offline cache since `fetchDate`: still fresh,
    /// or stale (`isStale`) because the API could not be reached.
    case cache(fetchDate: Date, isStale: Bool)

    public var description: String {
        switch self {
        case .embeddedCatalog: "the embedded catalog"
        case .appleMusicAPI: "the Apple Music API"
        case .cache(let fetchDate, let isStale):
            "the cache of the Apple Music API (fetched \(ISO8601DateFormatter().string(from: fetchDate))"
                + (isStale ? "; stale: the API could not be reached)" : ")")
        }
    }

    /// The source of an answer made of several: a stale copy if any part was one, else the
    /// API if any part came from it, else the oldest cached part.
    func combined(with other: MusicCatalogAnswerSource) -> MusicCatalogAnswerSource {
        switch (self, other) {
        case (.cache(let a, true), .cache(let b, true)): .cache(fetchDate: min(a, b), isStale: true)
        case (.cache(_, true), _): self
        case (_, .cache(_, true)): other
        case (.appleMusicAPI, _), (_, .appleMusicAPI): .appleMusicAPI
        case (.cache(let a, false), .cache(let b, false)): .cache(fetchDate: min(a, b), isStale: false)
        case (.embeddedCatalog, _): other
        case (_, .embeddedCatalog): self
        }
    }
}

/// A value kept beside a response's contents but left out of its equality and hash (where
/// an answer came from does not make two answers different).
struct NotCompared<Value: Sendable>: Hashable, Sendable {
    var value: Value
    static func == (_: Self, _: Self) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}

/// The catalog of the Apple Music API (`/v1/catalog/{storefront}/…`), which answers the
/// catalog requests instead of the embedded catalog when a developer token is configured:
///
/// - `MUSICKIT_CATALOG=remote` — always the API (a missing token is an error naming the
///   settings); `local` — always the embedded catalog; `auto` or unset — the API when an app set
///   its own `MusicDataRequest.tokenProvider` or the developer token settings are there
///   (`MUSICKIT_DEVELOPER_TOKEN` or `MUSICKIT_DEVELOPER_KEY_FILE`, or the settings file).
///
/// Requests go through `MusicDataRequest` (tokens, retries, error bodies), to
/// `MusicDataRequest.baseURL`, with Apple's query parameters and `l` from the locale (`LANG`).
/// Answers are kept in `CatalogResponseCache` with their freshness: a fresh one answers again
/// without the network, a stale one answers when the API cannot be reached, and every answer
/// says where it came from (`MusicCatalogAnswerSource`).
struct AppleMusicCatalog: Sendable {
    enum Choice: String, Sendable {
        case auto, remote, local
    }

    let environment: MusicKitEnvironment
    let account: MusicAccountSettings
    /// `l`: the language of names and notes, from the locale; nil for the storefront's default.
    let language: String?

    static let choiceVariable = "MUSICKIT_CATALOG"
    /// Identifiers in one request (Apple: at most 300 songs, 100 albums).
    static let identifiersPerRequest = 100

    /// The remote catalog when it answers catalog requests now, nil for the embedded one.
    static func current(_ environment: MusicKitEnvironment = .current) throws -> AppleMusicCatalog? {
        guard try choice(environment).usesAPI else { return nil }
        return AppleMusicCatalog(environment: environment, account: MusicCatalogService.account(environment),
                                 language: language(ProcessInfo.processInfo.environment))
    }

    /// Whether the API answers, and why (`MUSICKIT_CATALOG`, or whether a token is configured).
    static func choice(_ environment: MusicKitEnvironment) throws -> (usesAPI: Bool, reason: String) {
        let value = ProcessEnvironment.nonEmpty(choiceVariable) ?? "auto"
        switch Choice(rawValue: value) {
        case .local: return (false, "\(choiceVariable)=local")
        case .remote: return (true, "\(choiceVariable)=remote")
        case .auto:
            if !(MusicDataRequest.tokenProvider is DefaultMusicTokenProvider) {
                return (true, "the app set its own MusicDataRequest.tokenProvider")
            }
            // Settings that cannot be read count as configured: the request then says what is wrong.
            if (try? MusicDeveloperTokenSettings.current(configDirectory: environment.configDirectory).isConfigured) ?? true {
                return (true, "a developer token is configured")
            }
            return (false, "no developer token is configured (MUSICKIT_DEVELOPER_TOKEN, or MUSICKIT_DEVELOPER_KEY_FILE "
                        + "with MUSICKIT_KEY_ID and MUSICKIT_TEAM_ID)")
        case nil:
            throw MusicCatalogError.unsupportedRequest("\(choiceVariable)=\(value): expected remote, local or auto")
        }
    }

    /// `en_GB.UTF-8` → `en-GB`; nil for `C`/`POSIX` or no locale.
    static func language(_ environment: [String: String]) -> String? {
        guard let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) else {
            return nil
        }
        let tag = locale.split(separator: ".").first.map(String.init)?.split(separator: "@").first.map(String.init) ?? ""
        guard !tag.isEmpty, tag != "C", tag != "POSIX" else { return nil }
        return tag.replacingOccurrences(of: "_", with: "-")
    }

    // MARK: - Fetching

    /// The API's JSON document shapes the catalog reads.
    struct Document: Decodable {
        var data: [ResourceObject]? = nil
        var next: String? = nil
        var results: [String: ResourceObject.Relationship]? = nil
    }

    /// `GET path?query` decoded, from the cache while fresh; a stale copy when the API cannot
    /// be reached.
    func get<Answer: Decodable>(_ type: Answer.Type = Document.self, path: String,
                                query: [URLQueryItem]) async throws -> (Answer, MusicCatalogAnswerSource) {
        var components = URLComponents()
        components.path = path
        var items = query
        if let language, !items.contains(where: { $0.name == "l" }) { items.append(URLQueryItem(name: "l", value: language)) }
        components.queryItems = items.isEmpty ? nil : items
        return try await get(type, relative: components.string ?? path)
    }

    /// `get`, with "not found" (404) answered as a document without data: asked by identifiers
    /// or a filter, the API may answer that when it has none of them.
    private func find(path: String, query: [URLQueryItem]) async throws -> (Document, MusicCatalogAnswerSource) {
        do {
            return try await get(path: path, query: query)
        } catch let error as MusicDataRequest.Error where error.status == 404 {
            return (Document(), .appleMusicAPI)
        }
    }

    /// `GET href` (a `next` link), with `limit` set when given.
    func get(href: String, limit: Int?) async throws -> (Document, MusicCatalogAnswerSource) {
        guard var components = URLComponents(string: href), components.path.hasPrefix("/v1/") else {
            throw MusicCatalogError.unsupportedRequest(href)
        }
        if let limit {
            components.queryItems = (components.queryItems ?? []).filter { $0.name != "limit" } + [URLQueryItem(name: "limit", value: String(limit))]
        }
        return try await get(Document.self, relative: components.string ?? href)
    }

    private func get<Answer: Decodable>(_ type: Answer.Type, relative: String) async throws -> (Answer, MusicCatalogAnswerSource) {
        let (body, source, url) = try await body(relative: relative)
        do {
            return (try JSONDecoder().decode(type, from: body), source)
        } catch let error as DecodingError {
            throw MusicCatalogError.invalidAnswer(url: url.path + (url.query.map { "?" + $0 } ?? ""),
                                                  jsonPath: CatalogDocument.path(of: error), reason: CatalogDocument.reason(of: error))
        }
    }

    /// The body of `GET relative` (a path with its query) and where it came from.
    func body(relative: String) async throws -> (Data, MusicCatalogAnswerSource, URL) {
        guard let url = URL(string: relative, relativeTo: MusicDataRequest.baseURL)?.absoluteURL else {
            throw MusicCatalogError.unsupportedRequest(relative)
        }
        let cache = try? CatalogResponseCache.open(environment)
        let cached = try? cache?.entry(for: url)
        let now = Date()
        if let cached, cached.freshUntil > now {
            return (cached.body, .cache(fetchDate: cached.fetched, isStale: false), url)
        }
        let response: MusicDataResponse
        do {
            response = try await MusicDataRequest.response(to: HTTPRequest(url: url))
        } catch let error as URLError {
            guard let cached else { throw error }
            return (cached.body, .cache(fetchDate: cached.fetched, isStale: true), url)
        } catch let error as MusicDataRequest.Error where error.status >= 500 {
            guard let cached else { throw error }
            return (cached.body, .cache(fetchDate: cached.fetched, isStale: true), url)
        }
        if let freshUntil = CatalogResponseCache.freshUntil(response.httpResponse, fetched: now) {
            try? cache?.store(CatalogResponseCache.Entry(body: response.data, fetched: now, freshUntil: freshUntil), for: url)
        }
        return (response.data, .appleMusicAPI, url)
    }

    // MARK: - Requests

    private var storefrontPath: String { "/v1/catalog/\(account.storefront)" }

    /// `include`, `views` and `extend` for properties to load with the items.
    static func propertyQuery(_ properties: [(key: String, source: MusicPropertyKind)]) -> [URLQueryItem] {
        var query: [URLQueryItem] = []
        for (name, kind) in [("include", MusicPropertyKind.relationship), ("views", .view), ("extend", .extendedAttribute)] {
            let keys = properties.filter { $0.source == kind }.map(\.key)
            if !keys.isEmpty { query.append(URLQueryItem(name: name, value: keys.joined(separator: ","))) }
        }
        return query
    }

    func allows(_ resource: ResourceObject) -> Bool {
        account.allowsExplicitContent || resource.contentRating != .explicit
    }

    /// Resources by identifier, keyed by the identifier asked for; with `findEquivalents`, an
    /// identifier the storefront does not have is asked again as `filter[equivalents]`.
    func resources(type: String, ids: [String], findEquivalents: Bool,
                   properties: [(key: String, source: MusicPropertyKind)]) async throws
        -> (pairs: [(requested: String, resource: ResourceObject)], source: MusicCatalogAnswerSource) {
        var source = MusicCatalogAnswerSource.embeddedCatalog
        var byID: [String: ResourceObject] = [:]
        let extra = AppleMusicCatalog.propertyQuery(properties)
        for start in stride(from: 0, to: ids.count, by: AppleMusicCatalog.identifiersPerRequest) {
            let chunk = ids[start..<min(start + AppleMusicCatalog.identifiersPerRequest, ids.count)]
            let (document, answered) = try await find(
                path: "\(storefrontPath)/\(type)", query: [URLQueryItem(name: "ids", value: chunk.joined(separator: ","))] + extra)
            source = source.combined(with: answered)
            for resource in document.data ?? [] { byID[resource.id] = resource }
        }
        var pairs: [(requested: String, resource: ResourceObject)] = []
        for id in ids {
            if let resource = byID[id], allows(resource) {
                pairs.append((id, resource))
            } else if findEquivalents {
                let (document, answered) = try await find(
                    path: "\(storefrontPath)/\(type)", query: [URLQueryItem(name: "filter[equivalents]", value: id)] + extra)
                source = source.combined(with: answered)
                if let equivalent = document.data?.first(where: allows) { pairs.append((id, equivalent)) }
            }
        }
        return (pairs, source)
    }

    /// Resources whose `filter` (`isrc`, `upc`) is one of `values`.
    func resources(type: String, filter: String, values: [String],
                   properties: [(key: String, source: MusicPropertyKind)]) async throws -> ([ResourceObject], MusicCatalogAnswerSource) {
        let (document, source) = try await find(
            path: "\(storefrontPath)/\(type)",
            query: [URLQueryItem(name: "filter[\(filter)]", value: values.joined(separator: ","))] + AppleMusicCatalog.propertyQuery(properties))
        return ((document.data ?? []).filter(allows), source)
    }

    /// The first page of a top-level type (genres).
    func all(type: String, limit: Int) async throws -> (items: [ResourceObject], next: String?, source: MusicCatalogAnswerSource) {
        let (document, source) = try await get(path: "\(storefrontPath)/\(type)",
                                                         query: [URLQueryItem(name: "limit", value: String(limit))])
        return (document.data ?? [], document.next, source)
    }

    /// `/search`: per type the items and their `next` link, and the top results when asked.
    func searchDocument(term: String, types: [String], limit: Int, offset: Int, topResults: Bool) async throws
        -> (results: [String: (items: [ResourceObject], next: String?)], top: [ResourceObject], source: MusicCatalogAnswerSource) {
        var query = [URLQueryItem(name: "term", value: term), URLQueryItem(name: "types", value: types.joined(separator: ",")),
                     URLQueryItem(name: "limit", value: String(limit))]
        if offset > 0 { query.append(URLQueryItem(name: "offset", value: String(offset))) }
        if topResults { query.append(URLQueryItem(name: "with", value: "topResults")) }
        let (document, source) = try await get(path: "\(storefrontPath)/search", query: query)
        var results: [String: (items: [ResourceObject], next: String?)] = [:]
        for (key, relationship) in document.results ?? [:] where key != "top" {
            results[key] = (relationship.data.filter(allows), relationship.next)
        }
        return (results, (document.results?["top"]?.data ?? []).filter(allows), source)
    }

    /// `/search/suggestions`: suggested terms, and top results of `types` when there are types.
    func suggestionsDocument(term: String, types: [String], limit: Int) async throws
        -> (terms: [(search: String, display: String)], top: [ResourceObject], source: MusicCatalogAnswerSource) {
        struct Suggestions: Decodable {
            struct Results: Decodable { var suggestions: [Suggestion]? }
            struct Suggestion: Decodable {
                var kind: String
                var searchTerm: String?
                var displayTerm: String?
                var content: ResourceObject?
            }
            var results: Results
        }
        var query = [URLQueryItem(name: "term", value: term), URLQueryItem(name: "limit", value: String(limit)),
                     URLQueryItem(name: "kinds", value: types.isEmpty ? "terms" : "terms,topResults")]
        if !types.isEmpty { query.append(URLQueryItem(name: "types", value: types.joined(separator: ","))) }
        let (answer, source) = try await get(Suggestions.self, path: "\(storefrontPath)/search/suggestions", query: query)
        let suggestions = answer.results.suggestions ?? []
        let terms = suggestions.compactMap { suggestion in
            suggestion.searchTerm.map { (search: $0, display: suggestion.displayTerm ?? $0) }
        }
        return (terms, suggestions.compactMap(\.content).filter(allows), source)
    }

    /// `/charts` for one kind: the charts of each type, as the API sends them.
    func chartsDocument(kind: String, types: [String], genre: String?, limit: Int, offset: Int) async throws
        -> (MusicCatalogChartsResponse, MusicCatalogAnswerSource) {
        var query = [URLQueryItem(name: "types", value: types.joined(separator: ",")), URLQueryItem(name: "chart", value: kind),
                     URLQueryItem(name: "limit", value: String(limit))]
        if offset > 0 { query.append(URLQueryItem(name: "offset", value: String(offset))) }
        if let genre { query.append(URLQueryItem(name: "genre", value: genre)) }
        return try await get(MusicCatalogChartsResponse.self, path: "\(storefrontPath)/charts", query: query)
    }

    /// `resource` with `properties` loaded from its own URL (`include`, `views`, `extend`).
    func load(_ properties: [(key: String, source: MusicPropertyKind)], for resource: ResourceObject) async throws -> ResourceObject {
        let type = resource.type.hasPrefix("library-") ? String(resource.type.dropFirst(8)) : resource.type
        let id = resource.playParameters?.catalogID ?? resource.id
        let storefront = MusicCatalogService.storefront(of: resource) ?? account.storefront
        let (document, _) = try await get(path: "/v1/catalog/\(storefront)/\(type)/\(id)",
                                                    query: AppleMusicCatalog.propertyQuery(properties))
        guard let fetched = document.data?.first else { return resource }
        var loaded = resource
        for (key, source) in properties {
            switch source {
            case .relationship: loaded.relationships[key] = fetched.relationships[key] ?? ResourceObject.Relationship(data: [])
            case .view: loaded.views[key] = fetched.views[key] ?? ResourceObject.Relationship(data: [])
            case .extendedAttribute: if let value = fetched.attributes[key] { loaded.attributes[key] = value }
            }
        }
        return loaded
    }

    /// The batch a `next` link names: a search's (`results`) or a list's (`data`).
    func nextBatch<Item: MusicItem>(of type: Item.Type, href: String, limit: Int?) async throws -> MusicItemCollection<Item>? {
        let (document, _) = try await get(href: href, limit: limit)
        if let data = document.data {
            return MusicCatalogService.collection(of: type, data.filter(allows), next: document.next)
        }
        guard let results = document.results?.first(where: { $0.key != "top" })?.value else { return nil }
        return MusicCatalogService.collection(of: type, results.data.filter(allows), next: results.next)
    }
}
