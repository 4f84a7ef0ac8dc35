import Foundation

/// Where the catalog's requests are answered: the Apple Music API (`AppleMusicCatalog`) when a
/// developer token is configured, else the embedded catalog (`MusicCatalogService`). A request
/// asks `catalogBackend()` once and gives it what it wants in the API's terms (catalog type
/// names, clamped limits); each backend answers it its own way, so the requests hold no branch
/// per backend.
protocol CatalogBackend: Sendable {
    /// The resources `filter` names, each with the ID it was asked by (an equivalent's answer
    /// keeps the requested ID), with `properties` loaded; for `.all`, the first page of `limit`
    /// (25 when nil) and the next page's link.
    func resources(type: String, filter: CatalogResourceFilter, findEquivalents: Bool, limit: Int?,
                   properties: [(key: String, source: MusicPropertyKind)]) async throws -> CatalogResourceAnswer

    /// A search of `types`: per type a page of `limit` from `offset` with its next page's link,
    /// and the top results when asked.
    func search(term: String, types: [String], limit: Int, offset: Int, topResults: Bool) async throws -> MusicCatalogSearchResponse

    /// Terms that complete `term`, and top results of `types` (none without types).
    func suggestions(term: String, types: [String], limit: Int) async throws -> MusicCatalogSearchSuggestionsResponse

    /// The charts of each kind for `types`, within `genre` when given: a page of `limit` from `offset`.
    func charts(kinds: [MusicCatalogChartKind], types: [String], genre: Genre?, limit: Int, offset: Int) async throws
        -> MusicCatalogChartsResponse

    /// `resource` with `properties` (relationships, views, extended attributes) filled in.
    func load(_ properties: [(key: String, source: MusicPropertyKind)], for resource: ResourceObject,
              preferredSource: MusicPropertySource) async throws -> ResourceObject

    /// The batch a `next` link names, nil when it names none.
    func nextBatch<Item: MusicItem>(of type: Item.Type, href: String, limit: Int?) async throws -> MusicItemCollection<Item>?
}

/// The backend that answers catalog requests now: the Apple Music API when it is configured
/// (`AppleMusicCatalog.current()`), else the embedded catalog.
func catalogBackend() async throws -> any CatalogBackend {
    if let remote = try AppleMusicCatalog.current() { return remote }
    return try await MusicCatalogService.current()
}

/// Which resources a `MusicCatalogResourceRequest` asks for.
enum CatalogResourceFilter: Sendable, Equatable {
    case ids([String])
    case isrc([String])
    case upc([String])
    case all

    /// The Apple Music API's name of a value filter (`filter[isrc]`).
    var apiName: String {
        switch self {
        case .isrc: "isrc"
        case .upc: "upc"
        case .ids: "id"
        case .all: ""
        }
    }
}

/// A resource request's answer: each resource with the ID it was asked by, the next page's
/// link, and where the answer came from.
typealias CatalogResourceAnswer = (pairs: [(requested: String, resource: ResourceObject)], next: String?,
                                   source: MusicCatalogAnswerSource)

// MARK: - The embedded catalog

extension MusicCatalogService: CatalogBackend {
    func resources(type: String, filter: CatalogResourceFilter, findEquivalents: Bool, limit: Int?,
                   properties: [(key: String, source: MusicPropertyKind)]) throws -> CatalogResourceAnswer {
        var pairs: [(requested: String, resource: ResourceObject)]
        var next: String?
        switch filter {
        case .ids(let ids):
            pairs = try resources(type: type, ids: ids, findEquivalents: findEquivalents, account: account)
        case .isrc(let values):
            pairs = try resources(type: type, column: "isrc", values: values, account: account).map { ($0.id, $0) }
        case .upc(let values):
            pairs = try resources(type: type, column: "upc", values: values, account: account).map { ($0.id, $0) }
        case .all:
            let pageLimit = limit ?? 25
            let (items, total) = try allResources(type: type, account: account, limit: pageLimit, offset: 0)
            pairs = items.map { ($0.id, $0) }
            if items.count < total { next = "/v1/catalog/\(account.storefront)/\(type)?offset=\(items.count)&limit=\(pageLimit)" }
        }
        if !properties.isEmpty {
            pairs = try pairs.map { ($0.requested, try load(properties, for: MusicCatalogService.trimmed($0.resource), preferredSource: .catalog)) }
        }
        return (pairs, next, .embeddedCatalog)
    }

    func search(term: String, types: [String], limit: Int, offset: Int, topResults: Bool) throws -> MusicCatalogSearchResponse {
        var results: [String: (items: [ResourceObject], next: String?)] = [:]
        for key in types {
            let (items, hasMore) = try search(term: term, type: key, account: account, limit: limit, offset: offset)
            results[key] = (items.map { MusicCatalogService.trimmed($0) },
                            hasMore ? MusicCatalogService.searchHref(storefront: account.storefront, term: term, type: key,
                                                                     offset: offset + items.count, limit: limit) : nil)
        }
        var response = MusicCatalogSearchResponse(results: results)
        response.source = NotCompared(value: .embeddedCatalog)
        if topResults {
            let top = MusicCatalogSearchResponse.TopResult.interleaving(types.map { results[$0]?.items ?? [] }, rounds: 3)
            response.topResults = MusicItemCollection(items: Array(top.prefix(limit)))
        }
        return response
    }

    func suggestions(term: String, types: [String], limit: Int) throws -> MusicCatalogSearchSuggestionsResponse {
        // Top results: items whose name matches what is typed (not those that only match by
        // artist or album: asking the index for those too is what made a keystroke slow), the
        // first of each type, then the second...; found in the same scan as the terms where it can.
        let perType = types.isEmpty ? 0 : (limit + types.count - 1) / types.count
        let (terms, top) = try suggestions(for: term, account: account, limit: limit, topTypes: types, perType: perType)
        let found = types.map { (top[$0] ?? []).map { MusicCatalogService.trimmed($0) } }
        let topResults = Array(MusicCatalogSearchResponse.TopResult.interleaving(found, rounds: perType).prefix(limit))
        return MusicCatalogSearchSuggestionsResponse(
            suggestions: terms.map { .init(searchTerm: $0, displayTerm: $0) },
            topResults: MusicItemCollection(items: topResults))
    }

    func charts(kinds: [MusicCatalogChartKind], types: [String], genre: Genre?, limit: Int, offset: Int) throws
        -> MusicCatalogChartsResponse {
        var response = MusicCatalogChartsResponse()
        response.source = NotCompared(value: .embeddedCatalog)
        for kind in kinds {
            for key in types {
                var (name, items) = try chart(type: key, chart: kind.apiValue, account: account)
                if let genre {
                    items = items.filter { ($0.strings("genreNames") ?? []).contains(genre.name) }
                    name = "\(name) (\(genre.name))"
                }
                guard !items.isEmpty else { continue }
                let page = Array(items.dropFirst(offset).prefix(limit)).map { MusicCatalogService.trimmed($0) }
                let id = "\(kind.apiValue):\(key)"
                switch key {
                case "songs": response.songCharts.append(MusicCatalogChart(id: id, items: MusicItemCollection(items: page.map(Song.init(resource:))), kind: kind, title: name))
                case "albums": response.albumCharts.append(MusicCatalogChart(id: id, items: MusicItemCollection(items: page.map(Album.init(resource:))), kind: kind, title: name))
                case "playlists": response.playlistCharts.append(MusicCatalogChart(id: id, items: MusicItemCollection(items: page.map(Playlist.init(resource:))), kind: kind, title: name))
                case "music-videos": response.musicVideoCharts.append(MusicCatalogChart(id: id, items: MusicItemCollection(items: page.map(MusicVideo.init(resource:))), kind: kind, title: name))
                default: break
                }
            }
        }
        return response
    }
}

// MARK: - The Apple Music API

extension AppleMusicCatalog: CatalogBackend {
    func resources(type: String, filter: CatalogResourceFilter, findEquivalents: Bool, limit: Int?,
                   properties: [(key: String, source: MusicPropertyKind)]) async throws -> CatalogResourceAnswer {
        switch filter {
        case .ids(let ids):
            let (pairs, source) = try await resources(type: type, ids: ids, findEquivalents: findEquivalents, properties: properties)
            return (pairs, nil, source)
        case .isrc(let values), .upc(let values):
            let (resources, source) = try await resources(type: type, filter: filter.apiName, values: values, properties: properties)
            return (resources.map { ($0.id, $0) }, nil, source)
        case .all:
            let (items, next, source) = try await all(type: type, limit: limit ?? 25)
            return (items.map { ($0.id, $0) }, next, source)
        }
    }

    func search(term: String, types: [String], limit: Int, offset: Int, topResults: Bool) async throws -> MusicCatalogSearchResponse {
        let (results, top, source) = try await searchDocument(term: term, types: types, limit: limit, offset: offset, topResults: topResults)
        var response = MusicCatalogSearchResponse(results: results.mapValues { ($0.items.map { MusicCatalogService.trimmed($0) }, $0.next) })
        response.topResults = MusicItemCollection(items: top.compactMap { MusicCatalogSearchResponse.TopResult(resource: MusicCatalogService.trimmed($0)) })
        response.source = NotCompared(value: source)
        return response
    }

    func suggestions(term: String, types: [String], limit: Int) async throws -> MusicCatalogSearchSuggestionsResponse {
        let (terms, top, _) = try await suggestionsDocument(term: term, types: types, limit: limit)
        return MusicCatalogSearchSuggestionsResponse(
            suggestions: terms.map { .init(searchTerm: $0.search, displayTerm: $0.display) },
            topResults: MusicItemCollection(items: top.compactMap { MusicCatalogSearchResponse.TopResult(resource: MusicCatalogService.trimmed($0)) }))
    }

    func charts(kinds: [MusicCatalogChartKind], types: [String], genre: Genre?, limit: Int, offset: Int) async throws
        -> MusicCatalogChartsResponse {
        var response = MusicCatalogChartsResponse()
        var source = MusicCatalogAnswerSource.embeddedCatalog
        for kind in kinds {
            let (charts, answered) = try await chartsDocument(kind: kind.apiValue, types: types, genre: genre?.id.rawValue,
                                                              limit: limit, offset: offset)
            response.albumCharts += charts.albumCharts
            response.musicVideoCharts += charts.musicVideoCharts
            response.playlistCharts += charts.playlistCharts
            response.songCharts += charts.songCharts
            source = source.combined(with: answered)
        }
        response.source = NotCompared(value: source)
        return response
    }

    /// Properties always come from the catalog here: a library item's are read from the
    /// library (`MusicCatalogService`) before a backend is asked.
    func load(_ properties: [(key: String, source: MusicPropertyKind)], for resource: ResourceObject,
              preferredSource: MusicPropertySource) async throws -> ResourceObject {
        try await load(properties, for: resource)
    }
}
