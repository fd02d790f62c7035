/* Forced into every C++ object of the wheel's build (RINGMASTER_MANYLINUX):
 * binds std::condition_variable::wait(unique_lock&) to its original symbol
 * version, GLIBCXX_3.4.11. Why: linking against GCC 12's libstdc++ picks
 * that symbol's newer default version, GLIBCXX_3.4.30, which RHEL 9's
 * libstdc++ (GCC 11) lacks; every libstdc++ since GCC 4.4 keeps the
 * original, and it is the same function. A reference nothing makes costs
 * nothing. (The wheel is also compiled with GCC 11, whose headers use no
 * other symbol newer than GLIBCXX_3.4.29: scripts/python-wheel.) */
__asm__(".symver _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE,"
        "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
