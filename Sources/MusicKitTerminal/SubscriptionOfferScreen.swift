import Foundation
import Glibc
import MusicKitCore

extension MusicSubscriptionOffer {
    /// What the offer says, for `options`: a headline and a line that follow the message
    /// identifier and name the item when there is one.
    /// (Linux addition)
    public struct Message: Equatable, Sendable {
        public let headline: String
        public let body: String
        public let question: String
    }

    /// The offer's text (the terminal screen prints it).
    /// (Linux addition)
    public static func message(for options: Options, itemTitle: String?) -> Message {
        let item = itemTitle.map { "“\($0)”" }
        switch options.messageIdentifier {
        case .playMusic:
            return Message(headline: "Play \(item ?? "this music") with Apple Music",
                           body: "Subscribe to play every song in the catalog, with no ads, on all your devices.",
                           question: "Subscribe and play? [y/N] ")
        case .addMusic:
            return Message(headline: "Add \(item ?? "music") to your library with Apple Music",
                           body: "Subscribe to add any song, album or playlist of the catalog to your library.",
                           question: "Subscribe and add? [y/N] ")
        default:
            return Message(headline: "Join Apple Music",
                           body: "Subscribe to play the whole catalog\(item.map { ", starting with \($0)" } ?? ""), with no ads.",
                           question: "Subscribe? [y/N] ")
        }
    }

    /// Presents the offer on the terminal (the Linux counterpart of SwiftUI's
    /// `musicSubscriptionOffer(isPresented:options:)`): shows the message, and when the person
    /// accepts, subscribes the account without leaving the app. Returns whether the account is
    /// subscribed afterwards. Throws when there is no terminal to present on, or when the
    /// person cannot become a subscriber.
    /// (Linux addition)
    public static func present(options: Options = .default) async throws -> Bool {
        let descriptor = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw OfferError.noTerminal }
        defer { close(descriptor) }
        return try await present(options: options, input: descriptor, output: descriptor)
    }

    /// Why the offer could not be shown.
    /// (Linux addition)
    public enum OfferError: Error, Equatable, Sendable, CustomStringConvertible {
        case noTerminal
        case alreadySubscribed
        public var description: String {
            switch self {
            case .noTerminal: "no terminal to present the subscription offer on"
            case .alreadySubscribed: "the account is already subscribed"
            }
        }
    }

    static func present(options: Options, input: Int32, output: Int32) async throws -> Bool {
        let subscription = MusicSubscription(account: AccountStore.load().account)
        guard subscription.canBecomeSubscriber else { throw OfferError.alreadySubscribed }
        var title: String?
        if let itemID = options.itemID {
            title = try? await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: itemID).response().items.first?.title
            if title == nil {
                title = try? await MusicCatalogResourceRequest<Album>(matching: \.id, equalTo: itemID).response().items.first?.title
            }
        }
        let message = message(for: options, itemTitle: title)
        let screen = "\n  \(message.headline)\n  \(message.body)\n\n  \(message.question)"
        _ = screen.withCString { write(output, $0, strlen($0)) }
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while read(input, &byte, 1) == 1, byte != 0x0A { answer.append(byte) }
        let reply = String(decoding: answer, as: UTF8.self).trimmingCharacters(in: .whitespaces).lowercased()
        guard reply == "y" || reply == "yes" else { return false }
        try AccountStore.update { account in
            account.isSubscribed = true
            account.offerAttribution = [options.affiliateToken, options.campaignToken].compactMap { $0 }.joined(separator: " ")
        }
        let done = "  You're subscribed.\n"
        _ = done.withCString { write(output, $0, strlen($0)) }
        return true
    }
}
