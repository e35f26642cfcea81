import TouchstoneGLib

extension GLibLoopThread {
    /// The one thread in the process that runs libfprint.
    ///
    /// libfprint delivers every callback on the thread that iterates the
    /// GLib main context its sources are attached to, and its drivers
    /// attach timeouts and idle sources to GLib's global default context:
    /// this thread holds that context for good (GTask callbacks and the
    /// virtual readers' sockets attach there too, as its thread-default
    /// context). All libfprint calls happen inside jobs or callbacks, so
    /// they all run here. Jobs run at the default priority, before the
    /// drivers' idle sources.
    static let libfprint = GLibLoopThread(name: "touchstone-libfprint", context: .globalDefault,
                                          jobPriority: .default, stackSize: 8 << 20)
}
