"""Victim of t_py_site_lines.py: the shapes a `with anchor.phase` body
takes, each line tagged with what its SITE record must say.  `# with N`:
the with (or mark) line of phase N; `# in N..`: a line inside N's body;
`# why N`: N cannot be
read (a reason instead of lines); `# deco N`: the decorated function."""
import asyncio

import anchor


def work(n=3):
    return sum(range(n))


def shapes():
    with anchor.phase("plain"):  # with plain
        a = work()  # in plain
        b = work(a)  # in plain
    with anchor.phase("named") as p:  # with named
        work(len(p.name))  # in named
    with anchor.phase("outer"):  # with outer
        work()  # in outer
        with anchor.phase("inner"):  # with inner # in outer
            work()  # in outer inner
            work()  # in outer inner
        work()  # in outer
    with anchor.phase("tried"):  # with tried
        work()  # in tried
        try:  # in tried
            work()  # in tried
            raise KeyError(1)  # in tried
        except KeyError:  # in tried
            work()  # in tried
    for i in range(2):
        with anchor.phase("looped"):  # with looped
            if i:  # in looped
                continue  # in looped
            work()  # in looped
    with anchor.phase("oneline"): work()  # with oneline # why oneline
    anchor.mark("marked")  # with marked
    work()
    return early(0) + early(1)


def early(flag):
    with anchor.phase("early"):  # with early
        if flag:  # in early
            return 1  # in early
        work()  # in early
    return 0


@anchor.phase("deco")
def decorated():
    work()  # deco deco
    return work()  # deco deco


async def coro():
    async with anchor.phase("async"):  # with async
        await asyncio.sleep(0)  # in async
        work()  # in async


shapes()
decorated()
asyncio.run(coro())
