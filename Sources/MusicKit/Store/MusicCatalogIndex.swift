import Foundation

/// The embedded catalog database, for tools: build it with progress, import a person's own
/// documents, report what happened. Not part of Apple's API (there, the catalog is a server).
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
    }

    /// Opens the catalog of `environment`, importing the documents first when needed;
    /// `progress` hears about a long import.
    public static func prepare(environment: MusicKitEnvironment = .current,
                               progress: (@Sendable (CatalogImportProgress) -> Void)? = nil) throws -> Status {
        let service = try MusicCatalogService.open(environment, progress: progress)
        return Status(databasePath: environment.dataDirectory.appendingPathComponent("catalog.sqlite").path,
                      documentPaths: MusicCatalogService.documents(environment).map(\.path),
                      storefronts: (try? service.storefronts()) ?? [],
                      rebuildReason: service.rebuildReason, documentErrors: service.documentErrors)
    }

    /// Checks `documents`, copies them into the person's catalog folder and rebuilds the
    /// index with them. A document that does not parse is refused (nothing is copied).
    public static func importDocuments(_ documents: [URL], environment: MusicKitEnvironment = .current,
                                       progress: (@Sendable (CatalogImportProgress) -> Void)? = nil) throws -> Status {
        for document in documents { _ = try CatalogDocument(url: document) }
        let folder = MusicCatalogService.userDocumentsDirectory(environment)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for document in documents {
            let destination = folder.appendingPathComponent(document.lastPathComponent)
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.copyItem(at: document, to: destination)
        }
        MusicCatalogService.reset()
        return try prepare(environment: environment, progress: progress)
    }

    @TaskLocal static var storefrontOverride: String?

    /// Runs `operation` with catalog requests answered from `storefront` instead of the account's.
    public static func withStorefront<T>(_ storefront: String, operation: () async throws -> T) async rethrows -> T {
        try await $storefrontOverride.withValue(storefront.lowercased()) { try await operation() }
    }
}
