import Foundation
import Synchronization

/// Why a catalog request failed.
/// (Linux addition)
public enum MusicCatalogError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The bundled catalog documents were not found (set MUSICKIT_ASSETS).
    case noCatalogDocuments(searched: String)
    /// The catalog database could not be opened or built.
    case database(String)
    /// A request the catalog cannot answer, e.g. an unknown `next` link.
    case unsupportedRequest(String)
    /// The Apple Music API answered `url` with a document this framework cannot read: where in
    /// it, and what is wrong.
    case invalidAnswer(url: String, jsonPath: String, reason: String)

    public var description: String {
        switch self {
        case .noCatalogDocuments(let searched):
            "no catalog documents found (\(searched)); set MUSICKIT_ASSETS to the Assets folder"
        case .database(let message): "catalog database: \(message)"
        case .unsupportedRequest(let what): "unsupported catalog request: \(what)"
        case .invalidAnswer(let url, let jsonPath, let reason): "the Apple Music API's answer to \(url) is not usable: \(jsonPath): \(reason)"
        }
    }
}

/// Answers catalog requests from the embedded SQLite catalog, applying the account's
/// storefront and explicit-content setting. One per environment, opened (and built from the
/// documents when needed) on first use.
///
/// Thread safety: any thread; the store is behind a mutex (queries take microseconds to
/// milliseconds).
package final class MusicCatalogService: Sendable {
    let environment: MusicKitEnvironment
    private let store: Mutex<CatalogStore>
    /// Why the database was rebuilt when this service opened it (nil when it was current).
    let rebuildReason: String?
    /// Documents that could not be imported.
    let documentErrors: [CatalogDocumentError]
    /// Resources skipped or replaced while importing.
    let documentNotes: [CatalogDocumentError]
    /// Resources the catalog holds.
    let resourceCount: Int

    private static let services = Mutex<[URL: MusicCatalogService]>([:])

    /// The service for `MusicKitEnvironment.current`.
    package static func current() async throws -> MusicCatalogService {
        try open(MusicKitEnvironment.current)
    }

    static func open(_ environment: MusicKitEnvironment,
                     progress: ((CatalogImportProgress) -> Void)? = nil) throws -> MusicCatalogService {
        try services.withLock { services in
            if let service = services[environment.dataDirectory], service.environment == environment { return service }
            let service = try MusicCatalogService(environment: environment, progress: progress)
            services[environment.dataDirectory] = service
            return service
        }
    }

    /// Forgets open services (after the environment changed).
    static func reset() {
        services.withLock { $0.removeAll() }
    }

    /// The catalog documents: the bundled ones, then the person's own (`<data>/catalog/*.json`).
    static func documents(_ environment: MusicKitEnvironment) -> [URL] {
        var documents: [URL] = []
        if let assets = environment.assetsDirectory {
            documents += jsonFiles(under: assets.appendingPathComponent("Catalog"))
        }
        documents += jsonFiles(under: userDocumentsDirectory(environment))
        return documents
    }

    static func userDocumentsDirectory(_ environment: MusicKitEnvironment) -> URL {
        environment.dataDirectory.appendingPathComponent("catalog-documents")
    }

    private static func jsonFiles(under directory: URL) -> [URL] {
        guard let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        return enumerator.compactMap { $0 as? URL }.filter { $0.pathExtension == "json" }.sorted { $0.path < $1.path }
    }

    init(environment: MusicKitEnvironment, progress: ((CatalogImportProgress) -> Void)? = nil) throws {
        self.environment = environment
        let documents = MusicCatalogService.documents(environment)
        if documents.isEmpty {
            throw MusicCatalogError.noCatalogDocuments(searched: environment.assetsDirectory?.path ?? "MUSICKIT_ASSETS, the executable's folders, /usr/share/musickit")
        }
        do {
            let store = try CatalogStore(path: environment.dataDirectory.appendingPathComponent("catalog.sqlite"),
                                         documents: documents, progress: progress)
            rebuildReason = store.rebuildReason
            documentErrors = store.documentErrors
            documentNotes = store.documentNotes
            resourceCount = store.resourceCount
            if store.rebuildReason != nil, AccountStore.soundCheck(environment) != .off, let loudness = LoudnessStore.open(environment) {
                // With Sound Check on, the previews that are files (the bundled ones) are measured
                // once (with it off, each is when first queued with a player's normalization on).
                let songs = (try? store.resources(type: "songs", storefront: MusicCatalogService.account(environment).storefront,
                                                  limit: 100_000, offset: 0).items) ?? []
                let previews = Set(songs.compactMap { $0.previewAssets?.first?.url }.filter(\.isFileURL).map(\.path))
                loudness.measureAfterImport(previews.sorted())
            }
            self.store = Mutex(store)
        } catch let error as SQLiteError {
            throw MusicCatalogError.database(error.description)
        }
    }

    /// The account requests answer for (its storefront replaced inside `MusicCatalogIndex.withStorefront`).
    package var account: MusicAccountSettings { MusicCatalogService.account(environment) }

    static func account(_ environment: MusicKitEnvironment) -> MusicAccountSettings {
        var account = AccountStore.load(environment).account
        if let storefront = MusicCatalogIndex.storefrontOverride { account.storefront = storefront }
        return account
    }

    private func withStore<T>(_ body: (CatalogStore) throws -> T) throws -> T {
        try store.withLock { try body($0) }
    }

    // MARK: - Resources

    /// The resources for `ids`, keyed by the id asked for. With `findEquivalents`, an id from
    /// another storefront (or an explicit item the account does not allow) is answered by its
    /// equivalent in the account's storefront.
    func resources(type: String, ids: [String], findEquivalents: Bool,
                   account: MusicAccountSettings) throws -> [(requested: String, resource: ResourceObject)] {
        let storefront = account.storefront
        let direct = try withStore { try $0.resources(type: type, ids: ids, storefront: storefront) }
        var byID: [String: ResourceObject] = [:]
        for resource in direct { byID[resource.id] = resource }
        var results: [(String, ResourceObject)] = []
        for id in ids {
            if let resource = byID[id], allows(resource, account) {
                results.append((id, resource))
                continue
            }
            guard findEquivalents, let equivalent = try equivalent(of: id, type: type, original: byID[id], account: account) else {
                continue
            }
            results.append((id, equivalent))
        }
        return results
    }

    func allows(_ resource: ResourceObject, _ account: MusicAccountSettings) -> Bool {
        account.allowsExplicitContent || resource.contentRating != .explicit
    }

    /// The member of `id`'s equivalence group in the account's storefront that the account
    /// allows, preferring the same content rating as the original.
    private func equivalent(of id: String, type: String, original: ResourceObject?,
                            account: MusicAccountSettings) throws -> ResourceObject? {
        let members = try withStore { try $0.equivalents(type: type, id: id) }
        let local = members.filter { $0.storefront == account.storefront }.map(\.id)
        guard !local.isEmpty else { return nil }
        let candidates = try withStore { try $0.resources(type: type, ids: local, storefront: account.storefront) }
            .filter { allows($0, account) }
        // The original's rating, from wherever it was found.
        var originalRating = original?.contentRating
        if originalRating == nil, let member = members.first(where: { $0.id == id }) {
            originalRating = try withStore { try $0.resources(type: type, ids: [id], storefront: member.storefront) }.first?.contentRating
        }
        return candidates.first { $0.contentRating == originalRating } ?? candidates.first
    }

    func resources(type: String, column: String, values: [String], account: MusicAccountSettings) throws -> [ResourceObject] {
        try withStore { try $0.resources(type: type, column: column, values: values, storefront: account.storefront) }
            .filter { allows($0, account) }
    }

    package func allResources(type: String, account: MusicAccountSettings, limit: Int, offset: Int) throws -> (items: [ResourceObject], total: Int) {
        try withStore { try $0.resources(type: type, storefront: account.storefront, limit: limit, offset: offset) }
    }

    // MARK: - Search and charts

    /// `namesOnly`: only items whose name matches (a picker's top results as the person types),
    /// not those that match by artist or album too.
    func search(term: String, type: String, account: MusicAccountSettings, limit: Int, offset: Int,
                namesOnly: Bool = false) throws -> (items: [ResourceObject], hasMore: Bool) {
        try withStore {
            try $0.search(term: term, type: type, storefront: account.storefront, limit: limit, offset: offset,
                          excludeExplicit: !account.allowsExplicitContent, namesOnly: namesOnly)
        }
    }

    /// Suggested terms for what is typed, and the top results of `topTypes` (items whose name
    /// matches: a picker's as the person types), `perType` of each.
    func suggestions(for term: String, account: MusicAccountSettings, limit: Int, topTypes: [String],
                     perType: Int) throws -> (terms: [String], top: [String: [ResourceObject]]) {
        try withStore {
            let found = try $0.suggestions(term: term, storefront: account.storefront, limit: limit,
                                           excludeExplicit: !account.allowsExplicitContent, topTypes: topTypes, perType: perType)
            return (found.names, found.top)
        }
    }

    func chart(type: String, chart: String, account: MusicAccountSettings) throws -> (name: String, items: [ResourceObject]) {
        let (name, ids) = try withStore { try $0.chart(storefront: account.storefront, type: type, chart: chart) }
        let items = try withStore { try $0.resources(type: type, ids: ids, storefront: account.storefront) }
            .filter { allows($0, account) }
        return (name, items)
    }

    // MARK: - Properties

    /// The resource as returned to callers: relationships and views left out (unloaded), unless named.
    static func trimmed(_ resource: ResourceObject, keeping keys: Set<String> = []) -> ResourceObject {
        var trimmed = resource
        trimmed.relationships = resource.relationships.filter { keys.contains($0.key) }
        trimmed.views = resource.views.filter { keys.contains($0.key) }
        return trimmed
    }

    /// `resource` with the relationships and views named by `properties` filled with full items.
    func load(_ properties: [(key: String, source: MusicPropertyKind)], for resource: ResourceObject,
              preferredSource: MusicPropertySource) throws -> ResourceObject {
        let storefront = MusicCatalogService.storefront(of: resource) ?? account.storefront
        let type = resource.type.hasPrefix("library-") ? String(resource.type.dropFirst(8)) : resource.type
        let catalogID = resource.playParameters?.catalogID ?? resource.id
        guard let stored = try withStore({ try $0.resources(type: type, ids: [catalogID], storefront: storefront) }).first else {
            // Not in the catalog: the properties stay as they are (nil), as for an unknown item.
            return resource
        }
        var loaded = resource
        let account = self.account
        for (key, source) in properties {
            switch source {
            case .relationship:
                if let relationship = stored.relationships[key] {
                    loaded.relationships[key] = try full(relationship, storefront: storefront, account: account)
                } else {
                    loaded.relationships[key] = ResourceObject.Relationship(data: [])
                }
            case .view:
                if let view = stored.views[key] {
                    loaded.views[key] = try full(view, storefront: storefront, account: account)
                } else {
                    loaded.views[key] = ResourceObject.Relationship(data: [])
                }
            case .extendedAttribute:
                if let value = stored.attributes[key] { loaded.attributes[key] = value }
            }
        }
        return loaded
    }

    /// A relationship whose identifier-only items are replaced by the stored resources.
    private func full(_ relationship: ResourceObject.Relationship, storefront: String,
                      account: MusicAccountSettings) throws -> ResourceObject.Relationship {
        var byType: [String: [String]] = [:]
        for item in relationship.data { byType[item.type, default: []].append(item.id) }
        var found: [String: ResourceObject] = [:]
        for (type, ids) in byType {
            for resource in try withStore({ try $0.resources(type: type, ids: ids, storefront: storefront) }) {
                found[type + "/" + resource.id] = MusicCatalogService.trimmed(resource)
            }
        }
        var result = relationship
        result.data = relationship.data.compactMap { item in
            guard let resource = found[item.type + "/" + item.id] else { return item }
            return allows(resource, account) ? resource : nil
        }
        return result
    }

    static func storefront(of resource: ResourceObject) -> String? {
        guard let href = resource.href, href.hasPrefix("/v1/catalog/") else { return nil }
        return href.split(separator: "/").dropFirst(2).first.map(String.init)
    }

    // MARK: - Next batches

    /// Runs a `next` link of a collection this service produced.
    func nextBatch<Item: MusicItem>(of type: Item.Type, href: String, limit: Int?) throws -> MusicItemCollection<Item>? {
        guard let components = URLComponents(string: href) else { throw MusicCatalogError.unsupportedRequest(href) }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let path = components.path.split(separator: "/").map(String.init)
        let offset = Int(query["offset"] ?? "") ?? 0
        let pageLimit = limit ?? Int(query["limit"] ?? "") ?? 25
        let account = self.account
        // /v1/catalog/{storefront}/search?term=&types=&offset=&limit=
        if path.count == 4, path[3] == "search", let term = query["term"], let resourceType = query["types"] {
            let (items, hasMore) = try search(term: term, type: resourceType, account: account, limit: pageLimit, offset: offset)
            return MusicCatalogService.collection(of: type, items.map { MusicCatalogService.trimmed($0) },
                                                  next: hasMore ? MusicCatalogService.searchHref(storefront: account.storefront,
                                                      term: term, type: resourceType, offset: offset + items.count, limit: pageLimit) : nil)
        }
        // /v1/catalog/{storefront}/{type}?offset=  (top-level resources such as genres)
        if path.count == 4 {
            let (items, total) = try allResources(type: path[3], account: account, limit: pageLimit, offset: offset)
            let nextOffset = offset + items.count
            return MusicCatalogService.collection(of: type, items.map { MusicCatalogService.trimmed($0) },
                                                  next: nextOffset < total ? "/v1/catalog/\(path[2])/\(path[3])?offset=\(nextOffset)&limit=\(pageLimit)" : nil)
        }
        throw MusicCatalogError.unsupportedRequest(href)
    }

    static func searchHref(storefront: String, term: String, type: String, offset: Int, limit: Int) -> String {
        var components = URLComponents()
        components.path = "/v1/catalog/\(storefront)/search"
        components.queryItems = [URLQueryItem(name: "term", value: term), URLQueryItem(name: "types", value: type),
                                 URLQueryItem(name: "offset", value: String(offset)), URLQueryItem(name: "limit", value: String(limit))]
        return components.string ?? components.path
    }

    /// Items of `type` from resources (for the types this framework builds on resources).
    static func collection<Item: MusicItem>(of type: Item.Type, _ resources: [ResourceObject], title: String? = nil,
                                            next: String? = nil) -> MusicItemCollection<Item> {
        guard let resourceType = Item.self as? any ResourceBackedItem.Type else { return MusicItemCollection(items: []) }
        let items = resources.compactMap { resourceType.init(resource: $0) as? Item }
        return MusicItemCollection(items: items, title: title, next: next)
    }

    /// Counts and pages of an album's or playlist's tracks, for queues that load them lazily.
    func trackCount(of container: ResourceObject) throws -> Int {
        let storefront = MusicCatalogService.storefront(of: container) ?? account.storefront
        return try withStore { try $0.trackCount(storefront: storefront, containerType: container.type, containerID: container.id) }
    }

    func tracks(of container: ResourceObject, range: Range<Int>) throws -> [ResourceObject] {
        let storefront = MusicCatalogService.storefront(of: container) ?? account.storefront
        return try withStore {
            try $0.tracks(storefront: storefront, containerType: container.type, containerID: container.id, range: range)
        }.map { MusicCatalogService.trimmed($0) }
    }

    /// The catalog's storefronts.
    func storefronts() throws -> [String] { try withStore { try $0.storefronts() } }
}
