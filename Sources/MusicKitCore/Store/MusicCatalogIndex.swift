import PlatformSupport
import Foundation

/// The embedded catalog database, for tools: build it with progress, import a person's own
/// documents, report what happened. Not part of Apple's API (there, the catalog is a server).
/// (Linux addition)
public enum MusicCatalogIndex {
    /// What the catalog database holds and how it came to be.
    public struct Status: Sendable {
        public let databasePath: String
        public let documentPaths: [String]
        public let storefronts: [String]
        /// Why it was rebuilt when opened (first use, documents changed, a corrupt file), nil when reused.
        public let rebuildReason: String?
        /// Documents that could not be imported, each with its file and JSON path.
        public let documentErrors: [CatalogDocumentError]
        /// Resources that were skipped (unknown type, impossible values, nothing to store) or
        /// kept with a caveat (a numeric ID), and resources a later document replaced (the
        /// person's own documents override the bundled ones), each with its file and JSON path.
        public let documentNotes: [CatalogDocumentError]
        /// Resources the catalog holds, every storefront's copy counted once.
        public let resourceCount: Int
    }

    /// Opens the catalog of `environment`, importing the documents first when needed;
    /// `progress` hears about a long import.
    public static func prepare(environment: MusicKitEnvironment = .current,
                               progress: (@Sendable (CatalogImportProgress) -> Void)? = nil) throws -> Status {
        let service = try MusicCatalogService.open(environment, progress: progress)
        return Status(databasePath: environment.dataDirectory.appendingPathComponent("catalog.sqlite").path,
                      documentPaths: MusicCatalogService.documents(environment).map(\.path),
                      storefronts: (try? service.storefronts()) ?? [],
                      rebuildReason: service.rebuildReason, documentErrors: service.documentErrors,
                      documentNotes: service.documentNotes, resourceCount: service.resourceCount)
    }

    /// Checks `documents`, copies them into the person's catalog folder and rebuilds the
    /// index with them. A document that does not parse is refused (nothing is copied). Each
    /// copy replaces an earlier one only once it is complete and on disk (a crash leaves the
    /// old copy or the new one), and its relative URLs (previews, artwork) are made absolute,
    /// since they were relative to the document's own folder.
    public static func importDocuments(_ documents: [URL], environment: MusicKitEnvironment = .current,
                                       progress: (@Sendable (CatalogImportProgress) -> Void)? = nil) throws -> Status {
        var copies: [(name: String, data: Data)] = []
        for document in documents {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: document.path, isDirectory: &isFolder) else {
                throw CatalogDocumentError(file: document.path, jsonPath: "(file)", reason: "no such file")
            }
            if isFolder.boolValue {
                throw CatalogDocumentError(file: document.path, jsonPath: "(file)",
                                           reason: "is a folder, not a JSON document (import the .json files in it)")
            }
            let root = try CatalogDocument.readJSON(document)
            _ = try CatalogDocument(url: document, root: root)
            copies.append((document.lastPathComponent,
                           CatalogDocument.absolutized(root, relativeTo: document.deletingLastPathComponent())))
        }
        let folder = MusicCatalogService.userDocumentsDirectory(environment)
        try PrivateFiles.ensureDirectory(folder)
        for copy in copies {
            try PrivateFiles.writeAtomically(copy.data, to: folder.appendingPathComponent(copy.name))
        }
        MusicCatalogService.reset()
        return try prepare(environment: environment, progress: progress)
    }

    /// Which catalog answers catalog requests, and the Apple Music API's offline cache.
    public struct SourceStatus: Sendable {
        /// The Apple Music API answers; otherwise the embedded catalog.
        public let usesAppleMusicAPI: Bool
        /// Why: `MUSICKIT_CATALOG`, or whether a developer token is configured.
        public let reason: String
        /// Where the API is (`MUSICKIT_API_BASE_URL` changes it).
        public let apiBaseURL: URL
        public let cachePath: String
        /// Answers in the offline cache, and their bytes.
        public let cachedAnswers: Int
        public let cachedBytes: Int
    }

    /// Which catalog answers now (`MUSICKIT_CATALOG=remote|local|auto`; auto: the Apple Music
    /// API when a developer token is configured).
    public static func source(environment: MusicKitEnvironment = .current) throws -> SourceStatus {
        let (usesAPI, reason) = try AppleMusicCatalog.choice(environment)
        let cache = try CatalogResponseCache.open(environment)
        let (entries, bytes) = try cache.summary()
        return SourceStatus(usesAppleMusicAPI: usesAPI, reason: reason, apiBaseURL: MusicDataRequest.baseURL,
                            cachePath: cache.path.path, cachedAnswers: entries, cachedBytes: bytes)
    }

    @TaskLocal static var storefrontOverride: String?

    /// Runs `operation` with catalog requests answered from `storefront` instead of the account's.
    public static func withStorefront<T>(_ storefront: String, operation: () async throws -> T) async rethrows -> T {
        try await $storefrontOverride.withValue(storefront.lowercased()) { try await operation() }
    }
}
