internal import CGio
import TouchstoneSecure

extension DBusBus {
    /// Exports `object` at `path` with the interfaces of `root`, and for
    /// every direct child `path/NODE` with those of `children`
    /// (g_dbus_connection_register_subtree; GDBus trees are flat). Nodes
    /// are not enumerated: the object tells a call for a node that is not
    /// there by its path. For a collection and its items, which come and go
    /// with the vault's rows. Returns the registration, for `unexport`.
    @discardableResult
    package func exportSubtree(_ object: any DBusObject, at path: String, root: String, children: String) async throws -> [DBusRegistration] {
        let box = ConnectionBox(connection)
        let methodsOnly = object.answersProperties
        return try await thread.run { () throws(DBusError) -> [DBusRegistration] in
            var error: UnsafeMutablePointer<GError>?
            guard let rootNode = g_dbus_node_info_new_for_xml(root, &error) else {
                throw DBusError.taking(error, "the introspection data")
            }
            guard let node = g_dbus_node_info_new_for_xml(children, &error) else {
                g_dbus_node_info_unref(rootNode)
                throw DBusError.taking(error, "the introspection data")
            }
            let registration = Unmanaged.passRetained(Registration(object))
            let subtree = Unmanaged.passRetained(Subtree(registration: registration, root: rootNode, node: node,
                                                                 vtable: methodsOnly ? Subtree.methodsOnly : Subtree.full))
            var vtable = GDBusSubtreeVTable()
            vtable.enumerate = { _, _, _, _ in
                // No nodes listed (an item tree is the vault's to tell); an empty, NULL-terminated array.
                let list = UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>.allocate(capacity: 1)
                list.initialize(to: nil)
                let copy = g_strdupv(list)
                list.deallocate()
                return copy
            }
            vtable.introspect = { _, _, _, child, data in
                let subtree = Unmanaged<Subtree>.fromOpaque(data!).takeUnretainedValue()
                let node = child == nil ? subtree.root : subtree.node
                var count = 0
                while node.pointee.interfaces?[count] != nil { count += 1 }
                let infos = g_malloc0(gsize((count + 1) * MemoryLayout<UnsafeMutablePointer<GDBusInterfaceInfo>?>.size))!
                    .assumingMemoryBound(to: UnsafeMutablePointer<GDBusInterfaceInfo>?.self)
                for index in 0..<count { infos[index] = g_dbus_interface_info_ref(node.pointee.interfaces![index]) }
                return infos
            }
            vtable.dispatch = { _, _, _, interface, child, userData, data in
                let subtree = Unmanaged<Subtree>.fromOpaque(data!).takeUnretainedValue()
                guard let interface, g_dbus_node_info_lookup_interface(child == nil ? subtree.root : subtree.node, interface) != nil else {
                    return nil
                }
                userData?.pointee = subtree.registration.toOpaque()
                return UnsafePointer(subtree.vtable)
            }
            let id = g_dbus_connection_register_subtree(box.connection, path, &vtable, G_DBUS_SUBTREE_FLAGS_DISPATCH_TO_UNENUMERATED_NODES,
                                                        subtree.toOpaque(), { data in
                Unmanaged<Subtree>.fromOpaque(data!).release()
            }, &error)
            guard id != 0 else {
                subtree.release()
                throw DBusError.taking(error, "exporting the tree under \(path)")
            }
            _ = self.subtrees.withLock { $0.insert(id) }
            return [DBusRegistration(id: id, isSubtree: true)]
        }
    }

    /// A subtree's state for GDBus's callbacks: the object's registration
    /// (its calls go through the same vtables as `export`'s), the
    /// interfaces of the root and of each child.
    final class Subtree: @unchecked Sendable {
        // @unchecked Sendable: set once, then only read on the bus thread.
        let registration: Unmanaged<Registration>
        /// The interfaces of the subtree's own path, and of each child.
        let root: UnsafeMutablePointer<GDBusNodeInfo>
        let node: UnsafeMutablePointer<GDBusNodeInfo>
        let vtable: UnsafeMutablePointer<GDBusInterfaceVTable>

        init(registration: Unmanaged<Registration>, root: UnsafeMutablePointer<GDBusNodeInfo>, node: UnsafeMutablePointer<GDBusNodeInfo>,
             vtable: UnsafeMutablePointer<GDBusInterfaceVTable>) {
            self.registration = registration
            self.root = root
            self.node = node
            self.vtable = vtable
        }

        deinit {
            g_dbus_node_info_unref(root)
            g_dbus_node_info_unref(node)
            registration.release()
        }

        /// The vtables dispatch returns: they must outlive every call, so
        /// they are allocated once for the process.
        nonisolated(unsafe) static let full: UnsafeMutablePointer<GDBusInterfaceVTable> = {
            let pointer = UnsafeMutablePointer<GDBusInterfaceVTable>.allocate(capacity: 1)
            pointer.initialize(to: DBusBus.vtable)
            return pointer
        }()
        nonisolated(unsafe) static let methodsOnly: UnsafeMutablePointer<GDBusInterfaceVTable> = {
            let pointer = UnsafeMutablePointer<GDBusInterfaceVTable>.allocate(capacity: 1)
            pointer.initialize(to: DBusBus.methodsOnlyVTable)
            return pointer
        }()
    }
}
